package emptiness

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// Controller deletes empty NodeClaims.
type Controller struct {
	kube     client.Client
	cluster  *state.Cluster
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics

	mu sync.Mutex
	// busy remembers claims seen with workload, so the moment they empty is
	// recorded as their last pod event.
	busy map[string]bool
	// deleted remembers our own deletions until the cache shows them, so
	// budgets count them.
	deleted map[string]time.Time
}

// New builds the controller.
func New(kube client.Client, cluster *state.Cluster, clk clock.Clock, rec *events.Recorder, m *metrics.Metrics) *Controller {
	return &Controller{kube: kube, cluster: cluster, clk: clk, recorder: rec, metrics: m,
		busy: map[string]bool{}, deleted: map[string]time.Time{}}
}

// Controller declares the controller: NodeClaims and the pods on their
// nodes. One worker: budget accounting must see one decision at a time.
func (c *Controller) Controller() operator.Controller {
	return operator.Controller{
		Name:       "nodeclaim.emptiness",
		For:        &nsv1.NodeClaim{},
		Watches:    []operator.Watch{{Object: &corev1.Pod{}, Map: c.claimForPod}},
		Workers:    1,
		Reconciler: c,
	}
}

func (c *Controller) claimForPod(ctx context.Context, o client.Object) []reconcile.Request {
	node := o.(*corev1.Pod).Spec.NodeName
	if node == "" {
		return nil
	}
	claim, err := state.ClaimByNodeName(ctx, c.kube, node)
	if err != nil || claim == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: claim.Name}}}
}

// Reconcile gathers one claim's view and applies the pure emptiness verdict
// (pkg/lifecycle.EmptinessVerdict): delete the claim, wait, or leave it.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &nsv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		c.forget(req.Name)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !claim.DeletionTimestamp.IsZero() || claim.Status.NodeName == "" {
		// Nothing to gather; the verdict would leave it alone.
		return reconcile.Result{}, nil
	}
	pool := &nsv1.NodePool{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: claim.Labels[nsv1.LabelNodePool]}, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: claim.Status.NodeName}, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pods, err := state.PodsOnNode(ctx, c.kube, node.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	var poolClaims nsv1.NodeClaimList
	if err := c.kube.List(ctx, &poolClaims, client.MatchingLabels{nsv1.LabelNodePool: pool.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of nodepool %s: %w", pool.Name, err)
	}
	now := c.clk.Now()
	c.mu.Lock()
	c.pruneDeleted(poolClaims.Items, now)
	in := lifecycle.EmptinessInput{
		Claim: claim, Node: node, Pool: pool, Pods: pods, WasBusy: c.busy[claim.Name],
		Nominated:  c.cluster.HasNominations(claim.Name, node.Name),
		PoolClaims: ptrs(poolClaims.Items), RecentlyDeleted: c.recentlyDeleted(now), Now: now,
	}
	v := lifecycle.EmptinessVerdict(in)
	c.mu.Unlock()
	if v.BudgetErr != nil {
		c.recorder.Publish(events.Warning(pool, "BudgetInvalid", "Disrupt", v.BudgetErr.Error()))
	}
	if v.Busy {
		c.mu.Lock()
		c.busy[claim.Name] = true
		c.mu.Unlock()
		return reconcile.Result{}, nil
	}
	if v.StampEmptied {
		if err := c.recordEmptied(ctx, claim, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !v.Delete {
		return reconcile.Result{RequeueAfter: v.RequeueAfter}, nil
	}
	c.recorder.Publish(events.Normal(claim, events.ReasonEmpty, "Disrupt", v.Reason+"; removing it"))
	if err := c.kube.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("deleting empty nodeclaim %s: %w", claim.Name, err)
	}
	c.mu.Lock()
	c.deleted[claim.Name] = now
	delete(c.busy, claim.Name)
	c.mu.Unlock()
	c.metrics.NodeClaimsTerminated.WithLabelValues(pool.Name, "empty").Inc()
	return reconcile.Result{}, nil
}

// recordEmptied stamps LastPodEventTime when a claim seen busy turns empty,
// so consolidateAfter counts from the last pod leaving.
func (c *Controller) recordEmptied(ctx context.Context, claim *nsv1.NodeClaim, now time.Time) error {
	c.mu.Lock()
	delete(c.busy, claim.Name)
	c.mu.Unlock()
	base := claim.DeepCopy()
	claim.Status.LastPodEventTime = metav1.NewTime(now)
	if err := c.kube.Status().Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("recording the last pod event of nodeclaim %s: %w", claim.Name, err))
	}
	return nil
}

// deletedMemory is how long our own deletions count against the budget
// while the cache has not shown them.
const deletedMemory = time.Minute

// pruneDeleted forgets remembered deletions the cache now shows, or that
// are older than deletedMemory. c.mu must be held.
func (c *Controller) pruneDeleted(claims []nsv1.NodeClaim, now time.Time) {
	for _, cl := range claims {
		at, ok := c.deleted[cl.Name]
		if ok && (!cl.DeletionTimestamp.IsZero() || now.Sub(at) >= deletedMemory) {
			delete(c.deleted, cl.Name)
		}
	}
}

// recentlyDeleted reports our remembered deletions; c.mu must be held while
// it is called.
func (c *Controller) recentlyDeleted(now time.Time) func(string) bool {
	return func(name string) bool {
		at, ok := c.deleted[name]
		return ok && now.Sub(at) < deletedMemory
	}
}

func ptrs(items []nsv1.NodeClaim) []*nsv1.NodeClaim {
	out := make([]*nsv1.NodeClaim, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.busy, name)
	delete(c.deleted, name)
}
