package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// Poll intervals while waiting on things that send no event we watch.
const (
	drainPoll    = 2 * time.Second
	instancePoll = 5 * time.Second
	// stuckTerminating: a pod terminating longer than this is not waited for
	// (its kubelet may be gone with the instance).
	stuckTerminating = time.Minute
)

// Controller drains and terminates deleted NodeClaims.
type Controller struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
}

// New builds the controller.
func New(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, rec *events.Recorder, m *metrics.Metrics) *Controller {
	return &Controller{kube: kube, cloud: cloud, clk: clk, recorder: rec, metrics: m}
}

// Controllers declares the claim controller and the node controller that
// turns a deleted Node into a deleted claim.
func (c *Controller) Controllers() []operator.Controller {
	return []operator.Controller{{
		Name:         "nodeclaim.termination",
		For:          &nsv1.NodeClaim{},
		ForPredicate: deleting,
		Watches:      []operator.Watch{{Object: &corev1.Node{}, Predicate: deleting, Map: c.claimForNode}},
		Workers:      10,
		Reconciler:   c,
	}, {
		Name:         "node.termination",
		For:          &corev1.Node{},
		ForPredicate: deleting,
		Reconciler:   reconcile.Func(c.reconcileNode),
	}}
}

func deleting(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() }

func (c *Controller) claimForNode(ctx context.Context, o client.Object) []reconcile.Request {
	claim, err := state.ClaimForNode(ctx, c.kube, o.(*corev1.Node))
	if err != nil || claim == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: claim.Name}}}
}

// reconcileNode deletes the claim of a deleted Node, so the node goes through
// the same drain; a Node with no claim just loses our finalizer.
func (c *Controller) reconcileNode(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, nsv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	claim, err := state.ClaimForNode(ctx, c.kube, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if claim == nil {
		return reconcile.Result{}, removeFinalizer(ctx, c.kube, node)
	}
	if claim.DeletionTimestamp.IsZero() {
		if err := c.kube.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s of deleted node %s: %w", claim.Name, node.Name, err)
		}
	}
	return reconcile.Result{}, nil
}

// Reconcile takes a deleted claim through drain → terminate → finalizers.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &nsv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if claim.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(claim, nsv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeOf(ctx, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node != nil {
		if res, err := c.drain(ctx, claim, node); err != nil || res.RequeueAfter > 0 {
			return res, err
		}
	}
	if res, err := c.terminate(ctx, claim); err != nil || res.RequeueAfter > 0 {
		return res, err
	}
	if node != nil {
		if err := removeFinalizer(ctx, c.kube, node); err != nil {
			return reconcile.Result{}, err
		}
		if node.DeletionTimestamp.IsZero() {
			if err := c.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting node %s: %w", node.Name, err)
			}
		}
	}
	if err := removeFinalizer(ctx, c.kube, claim); err != nil {
		return reconcile.Result{}, err
	}
	c.metrics.CountTermination(claim.UID, claim.Labels[nsv1.LabelNodePool], lifecycle.TerminationReason(claim))
	c.recorder.Publish(events.Normal(claim, events.ReasonTerminated, "Terminate", "instance terminated and finalizers removed"))
	return reconcile.Result{}, nil
}

func (c *Controller) nodeOf(ctx context.Context, claim *nsv1.NodeClaim) (*corev1.Node, error) {
	if claim.Status.NodeName != "" {
		node := &corev1.Node{}
		err := c.kube.Get(ctx, types.NamespacedName{Name: claim.Status.NodeName}, node)
		if err == nil {
			return node, nil
		}
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("getting node %s: %w", claim.Status.NodeName, err)
		}
	}
	return state.NodeForClaim(ctx, c.kube, claim)
}

// terminate deletes the instance and waits until the cloud no longer reports
// it, so the finalizer never comes off a claim whose instance still runs.
func (c *Controller) terminate(ctx context.Context, claim *nsv1.NodeClaim) (reconcile.Result, error) {
	if claim.Status.ProviderID == "" {
		// Never launched as far as we recorded. If Create did run, the
		// instance carries the claim's name and garbage collection finds it.
		return reconcile.Result{}, nil
	}
	if err := c.cloud.Delete(ctx, claim); cloudprovider.IgnoreNodeClaimNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("terminating instance %s of nodeclaim %s: %w", claim.Status.ProviderID, claim.Name, err)
	}
	_, err := c.cloud.Get(ctx, claim.Status.ProviderID)
	switch {
	case cloudprovider.IsNodeClaimNotFound(err):
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("checking instance %s of nodeclaim %s: %w", claim.Status.ProviderID, claim.Name, err)
	}
	return reconcile.Result{RequeueAfter: instancePoll}, nil
}

func removeFinalizer(ctx context.Context, kube client.Client, o client.Object) error {
	if !controllerutil.ContainsFinalizer(o, nsv1.TerminationFinalizer) {
		return nil
	}
	base := o.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(o, nsv1.TerminationFinalizer)
	if err := kube.Patch(ctx, o, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing finalizer from %T %s: %w", o, o.GetName(), err)
	}
	return nil
}

func metaNow(clk clock.Clock) metav1.Time { return metav1.NewTime(clk.Now()) }
