package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
