package provisioning

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// NewNodeClaim is the NodeClaim a planned claim becomes: named name, owned
// by its pool (so deleting the pool deletes it), labelled with the plan's
// labels and the pool, annotated with the template's annotations and the
// pool's template hash (drift compares it, see pkg/disruption), with the
// requirements narrowed to the planned options and the pool template's node
// class, expiry, grace period and spot interruption risk ceiling. The
// unregistered taint is not part of it: the cloud provider puts it on the
// node at launch.
func NewNodeClaim(pool *nsv1.NodePool, cp *scheduling.ClaimPlan, name string) *nsv1.NodeClaim {
	tmpl := pool.Spec.Template
	labels := map[string]string{}
	for k, v := range cp.Labels {
		labels[k] = v
	}
	labels[nsv1.LabelNodePool] = pool.Name
	annotations := map[string]string{}
	for k, v := range tmpl.ObjectMeta.Annotations {
		annotations[k] = v
	}
	annotations[nsv1.AnnotationNodePoolHash] = pool.Hash()
	annotations[nsv1.AnnotationNodePoolHashVersion] = nsv1.NodePoolHashVersion
	return &nsv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: annotations,
			Finalizers:  []string{nsv1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: nsv1.GroupVersion.String(), Kind: "NodePool", Name: pool.Name, UID: pool.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: nsv1.NodeClaimSpec{
			Requirements:            ClaimRequirements(cp),
			Resources:               nsv1.ResourceRequirements{Requests: cp.Requests},
			Taints:                  cp.Taints,
			StartupTaints:           cp.StartupTaints,
			NodeClassRef:            tmpl.Spec.NodeClassRef,
			ExpireAfter:             tmpl.Spec.ExpireAfter,
			TerminationGracePeriod:  tmpl.Spec.TerminationGracePeriod,
			MaxSpotInterruptionRisk: tmpl.Spec.MaxSpotInterruptionRisk,
		},
	}
}

// ClaimRequirements are the plan's requirements minus the keys the system
// sets per node (nodepool, hostname…), which the API refuses in a spec.
func ClaimRequirements(cp *scheduling.ClaimPlan) []nsv1.NodeSelectorRequirementWithMinValues {
	var out []nsv1.NodeSelectorRequirementWithMinValues
	for _, r := range cp.Requirements.NodeSelectorRequirements() {
		if _, restricted := nsv1.RestrictedLabels[r.Key]; !restricted {
			out = append(out, r)
		}
	}
	return out
}
