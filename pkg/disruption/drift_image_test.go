package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TestDriftImageVariants: with an alias's variants in status.amis, a node is
// drifted only when its image is not the one its type gets now.
func TestDriftImageVariants(t *testing.T) {
	r := func(k string, op corev1.NodeSelectorOperator, vs ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: op, Values: vs}
	}
	amd64 := r(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")
	amis := func(std, nvidia string) []awsv1.AMI {
		return []awsv1.AMI{
			{ID: std, Architecture: "amd64", Requirements: []corev1.NodeSelectorRequirement{amd64,
				r(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpDoesNotExist), r(awsv1.LabelInstanceAcceleratorCount, corev1.NodeSelectorOpDoesNotExist)}},
			{ID: nvidia, Architecture: "amd64", Requirements: []corev1.NodeSelectorRequirement{amd64,
				r(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpExists), r(awsv1.LabelInstanceGPUManufacturer, corev1.NodeSelectorOpIn, "nvidia")}},
		}
	}
	plain := map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelInstanceTypeStable: "m5.large"}
	gpu := map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelInstanceTypeStable: "g5.xlarge",
		awsv1.LabelInstanceGPUCount: "1", awsv1.LabelInstanceGPUManufacturer: "nvidia"}
	tests := []struct {
		name   string
		labels map[string]string
		image  string
		amis   []awsv1.AMI
		want   bool
	}{
		{"plain type on the standard image", plain, "ami-std", amis("ami-std", "ami-gpu"), false},
		{"gpu type on the nvidia image", gpu, "ami-gpu", amis("ami-std", "ami-gpu"), false},
		{"gpu type on the standard image (launched before variants)", gpu, "ami-std", amis("ami-std", "ami-gpu"), true},
		{"plain type's image replaced", plain, "ami-std", amis("ami-std2", "ami-gpu"), true},
		{"only the nvidia image moved: plain type stays", plain, "ami-std", amis("ami-std", "ami-gpu2"), false},
		{"only the nvidia image moved: gpu type rolls", gpu, "ami-gpu", amis("ami-std", "ami-gpu2"), true},
		{"a type no image fits keeps a listed image", map[string]string{corev1.LabelArchStable: "arm64"}, "ami-std", amis("ami-std", "ami-gpu"), false},
		{"a type no image fits with an unlisted image", map[string]string{corev1.LabelArchStable: "arm64"}, "ami-old", amis("ami-std", "ami-gpu"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: tt.labels}}
			claim.Status.ImageID = tt.image
			nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
			nc.Status.AMIs = tt.amis
			reason, msg, got := Drifted(claim, &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, nc)
			if got != tt.want || (got && reason != DriftAMI) {
				t.Errorf("Drifted = %v %q (%s), want %v", got, reason, msg, tt.want)
			}
		})
	}
}

// TestBehaviouralFieldsDoNotDrift: a pool's weight, limits and disruption
// settings say how Nodesmith behaves, not what a node is, so changing them
// drifts no node; changing the template does (the control).
func TestBehaviouralFieldsDoNotDrift(t *testing.T) {
	tests := []struct {
		name   string
		change func(*nsv1.NodePool)
		want   DriftReason
	}{
		{"weight", func(p *nsv1.NodePool) { p.Spec.Weight = ptrTo(int32(50)) }, ""},
		{"limits", func(p *nsv1.NodePool) {
			p.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("10"), nsv1.ResourceNodes: resource.MustParse("3")}
		}, ""},
		{"consolidation policy", func(p *nsv1.NodePool) { p.Spec.Disruption.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmpty }, ""},
		{"consolidateAfter", func(p *nsv1.NodePool) { p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("10m") }, ""},
		{"budgets", func(p *nsv1.NodePool) {
			p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "0", Reasons: []nsv1.DisruptionReason{nsv1.DisruptionReasonDrifted}}}
		}, ""},
		{"control: a template label", func(p *nsv1.NodePool) { p.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "b"} }, DriftNodePool},
		{"control: a template taint", func(p *nsv1.NodePool) {
			p.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "b", Effect: corev1.TaintEffectNoSchedule}}
		}, DriftNodePool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(pool("p"))
			name := w.node("p", "small", "zone-a", nsv1.CapacityTypeOnDemand)
			claim := w.snap.ClaimByNode[name]
			p := w.pools["p"].DeepCopy()
			tt.change(p)
			reason, msg, drifted := Drifted(claim, p, w.classes["default"])
			if reason != tt.want || drifted != (tt.want != "") {
				t.Errorf("Drifted = %v %q (%s), want %q", drifted, reason, msg, tt.want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
