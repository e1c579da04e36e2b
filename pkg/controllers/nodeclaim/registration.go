package nodeclaim

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// register links the Node whose providerID matches the claim. The node watch
// brings us back when it appears; liveness bounds the wait.
func (c *Controller) register(ctx context.Context, claim *nsv1.NodeClaim) (reconcile.Result, error) {
	if !lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionLaunched) || lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionRegistered) {
		return reconcile.Result{}, nil
	}
	node, err := state.NodeForClaim(ctx, c.kube, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node == nil {
		c.setCondition(claim, lifecycle.Condition(nsv1.ConditionRegistered, false, "NodeNotFound",
			fmt.Sprintf("waiting for a Node with providerID %s", claim.Status.ProviderID)))
		return reconcile.Result{}, nil
	}
	base := node.DeepCopy()
	SyncNode(claim, node)
	// No optimistic lock: the kubelet rewrites the node's status every few
	// seconds, and a conflict there says nothing about the fields we set.
	if err := c.kube.Patch(ctx, node, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, fmt.Errorf("registering node %s for nodeclaim %s: %w", node.Name, claim.Name, err)
	}
	claim.Status.NodeName = node.Name
	c.setCondition(claim, lifecycle.Condition(nsv1.ConditionRegistered, true, "", ""))
	c.metrics.NodeClaimsRegistered.WithLabelValues(poolOf(claim)).Inc()
	c.recorder.Publish(events.Normal(claim, events.ReasonRegistered, "Register", "node "+node.Name+" registered"))
	return reconcile.Result{}, nil
}

// SyncNode makes node carry what its claim promises: the termination
// finalizer (the instance must not outlive an untracked Node), the claim's
// labels and annotations (the pool template's: Nodesmith's own bookkeeping
// annotations stay on the claim, do-not-disrupt goes to the node), its
// taints and startup taints, and it drops the unregistered taint that kept
// pods off until now.
func SyncNode(claim *nsv1.NodeClaim, node *corev1.Node) {
	controllerutil.AddFinalizer(node, nsv1.TerminationFinalizer)
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range claim.Annotations {
		if bookkeeping(k) {
			continue
		}
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[k] = v
	}
	for k, v := range claim.Labels {
		node.Labels[k] = v
	}
	node.Labels[nsv1.LabelNodeClaim] = claim.Name
	node.Labels[nsv1.LabelRegistered] = "true"
	for _, t := range append(append([]corev1.Taint{}, claim.Spec.Taints...), claim.Spec.StartupTaints...) {
		if !hasTaint(node.Spec.Taints, t) {
			node.Spec.Taints = append(node.Spec.Taints, t)
		}
	}
	kept := node.Spec.Taints[:0]
	for _, t := range node.Spec.Taints {
		if !t.MatchTaint(&nsv1.UnregisteredTaint) {
			kept = append(kept, t)
		}
	}
	node.Spec.Taints = kept
}

func hasTaint(ts []corev1.Taint, t corev1.Taint) bool {
	for i := range ts {
		if ts[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

// bookkeeping reports whether a claim annotation is Nodesmith's own record
// of the claim (hashes, disruption commands, deadlines…), which means
// nothing on the Node. do-not-disrupt is the user's and is copied.
func bookkeeping(key string) bool {
	if key == nsv1.AnnotationDoNotDisrupt {
		return false
	}
	domain, _, _ := strings.Cut(key, "/")
	return domain == nsv1.Group || strings.HasSuffix(domain, "."+nsv1.Group)
}
