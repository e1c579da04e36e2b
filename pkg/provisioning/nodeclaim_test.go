package provisioning

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

func TestNewNodeClaim(t *testing.T) {
	expire := nsv1.MustParseNillableDuration("720h")
	np := pool("default", func(p *nsv1.NodePool) {
		p.UID = "pool-uid"
		p.Spec.Template.ObjectMeta.Annotations = map[string]string{"team": "data"}
		p.Spec.Template.Spec.NodeClassRef = &nsv1.NodeClassReference{Group: "aws.nodesmith.sh", Kind: "EC2NodeClass", Name: "default"}
		p.Spec.Template.Spec.ExpireAfter = expire
		p.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	})
	gpu := corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}
	startup := corev1.Taint{Key: "cni-not-ready", Effect: corev1.TaintEffectNoSchedule}
	cp := &scheduling.ClaimPlan{
		NodePool: "default",
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c7g.large", "m7g.large"),
			scheduling.NewRequirement(corev1.LabelHostname, corev1.NodeSelectorOpIn, "x"),
			scheduling.NewRequirement(nsv1.LabelNodePool, corev1.NodeSelectorOpIn, "default"),
		),
		Requests:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
		Labels:        map[string]string{"app": "web", nsv1.LabelNodePool: "spoofed"},
		Taints:        []corev1.Taint{gpu},
		StartupTaints: []corev1.Taint{startup},
	}
	c := NewNodeClaim(np, cp, "default-abcde")
	tests := []struct {
		name string
		ok   bool
	}{
		{name: "named as asked", ok: c.Name == "default-abcde"},
		{name: "owned by its pool, blocking the pool's deletion", ok: len(c.OwnerReferences) == 1 &&
			c.OwnerReferences[0].Kind == "NodePool" && c.OwnerReferences[0].Name == "default" && c.OwnerReferences[0].UID == "pool-uid" &&
			c.OwnerReferences[0].BlockOwnerDeletion != nil && *c.OwnerReferences[0].BlockOwnerDeletion &&
			c.OwnerReferences[0].APIVersion == nsv1.GroupVersion.String()},
		{name: "termination finalizer", ok: len(c.Finalizers) == 1 && c.Finalizers[0] == nsv1.TerminationFinalizer},
		{name: "plan labels, with the pool label winning", ok: c.Labels["app"] == "web" && c.Labels[nsv1.LabelNodePool] == "default"},
		{name: "template annotations", ok: c.Annotations["team"] == "data"},
		{name: "the pool's template hash, for drift", ok: c.Annotations[nsv1.AnnotationNodePoolHash] == np.Hash() &&
			c.Annotations[nsv1.AnnotationNodePoolHashVersion] == nsv1.NodePoolHashVersion && len(np.Hash()) == 16},
		{name: "the template's annotations are not aliased", ok: len(np.Spec.Template.ObjectMeta.Annotations) == 1},
		{name: "requirements keep the options and drop restricted keys", ok: len(c.Spec.Requirements) == 1 &&
			c.Spec.Requirements[0].Key == corev1.LabelInstanceTypeStable && len(c.Spec.Requirements[0].Values) == 2},
		{name: "requests from the plan", ok: c.Spec.Resources.Requests.Cpu().Cmp(resource.MustParse("3")) == 0},
		{name: "taints and startup taints from the plan", ok: len(c.Spec.Taints) == 1 && c.Spec.Taints[0] == gpu &&
			len(c.Spec.StartupTaints) == 1 && c.Spec.StartupTaints[0] == startup},
		{name: "no unregistered taint: the provider puts it on the node", ok: !hasUnregistered(c.Spec.Taints) && !hasUnregistered(c.Spec.StartupTaints)},
		{name: "template node class, expiry and grace period", ok: c.Spec.NodeClassRef != nil && c.Spec.NodeClassRef.Name == "default" &&
			c.Spec.ExpireAfter.Duration != nil && *c.Spec.ExpireAfter.Duration == 720*time.Hour &&
			c.Spec.TerminationGracePeriod != nil && c.Spec.TerminationGracePeriod.Duration == time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("NewNodeClaim = %+v", c)
			}
		})
	}
}

func hasUnregistered(ts []corev1.Taint) bool {
	for _, t := range ts {
		if t.Key == nsv1.UnregisteredTaint.Key {
			return true
		}
	}
	return false
}
