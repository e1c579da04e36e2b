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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	rules "github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

// budgetRetry is how soon to look again when a budget holds a node back.
const budgetRetry = 10 * time.Second

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

// SetupWithManager watches NodeClaims and the pods on their nodes. One
// worker: budget accounting must see one decision at a time.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.emptiness").
		For(&nsv1.NodeClaim{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.claimForPod)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(c)
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

// Reconcile deletes the claim when its node is empty, eligible and in budget.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &nsv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		c.forget(req.Name)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !claim.DeletionTimestamp.IsZero() || !rules.IsTrue(claim.Status.Conditions, nsv1.ConditionInitialized) || claim.Status.NodeName == "" {
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
	if v := node.Annotations[nsv1.AnnotationDoNotDisrupt]; v == "true" {
		return reconcile.Result{}, nil
	}
	pods, err := state.PodsOnNode(ctx, c.kube, node.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !rules.IsEmpty(pods) {
		c.mu.Lock()
		c.busy[claim.Name] = true
		c.mu.Unlock()
		return reconcile.Result{}, nil
	}
	if err := c.recordEmptied(ctx, claim); err != nil {
		return reconcile.Result{}, err
	}
	eligibleAt, ok := rules.EmptySince(claim, pool)
	if !ok {
		return reconcile.Result{}, nil
	}
	now := c.clk.Now()
	if wait := eligibleAt.Sub(now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if c.cluster.HasNominations(claim.Name, node.Name) {
		return reconcile.Result{RequeueAfter: budgetRetry}, nil
	}
	allowed, err := c.allowed(ctx, pool, now)
	if err != nil {
		c.recorder.Publish(events.Warning(pool, "BudgetInvalid", "Disrupt", err.Error()))
	}
	if allowed <= 0 {
		return reconcile.Result{RequeueAfter: budgetRetry}, nil
	}
	c.recorder.Publish(events.Normal(claim, events.ReasonEmpty, "Disrupt",
		fmt.Sprintf("node %s has run no workload pods since %s; removing it", node.Name, eligibleAt.UTC().Format(time.RFC3339))))
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
func (c *Controller) recordEmptied(ctx context.Context, claim *nsv1.NodeClaim) error {
	c.mu.Lock()
	wasBusy := c.busy[claim.Name]
	delete(c.busy, claim.Name)
	c.mu.Unlock()
	if !wasBusy {
		return nil
	}
	base := claim.DeepCopy()
	claim.Status.LastPodEventTime = metav1.NewTime(c.clk.Now())
	if err := c.kube.Status().Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("recording the last pod event of nodeclaim %s: %w", claim.Name, err))
	}
	return nil
}

// allowed is how many more of pool's nodes the budgets let go now.
func (c *Controller) allowed(ctx context.Context, pool *nsv1.NodePool, now time.Time) (int, error) {
	var claims nsv1.NodeClaimList
	if err := c.kube.List(ctx, &claims, client.MatchingLabels{nsv1.LabelNodePool: pool.Name}); err != nil {
		return 0, fmt.Errorf("listing nodeclaims of nodepool %s: %w", pool.Name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	disrupting := 0
	for _, cl := range claims.Items {
		if !cl.DeletionTimestamp.IsZero() {
			disrupting++
			delete(c.deleted, cl.Name)
			continue
		}
		if at, ok := c.deleted[cl.Name]; ok {
			if now.Sub(at) < time.Minute {
				disrupting++
			} else {
				delete(c.deleted, cl.Name)
			}
		}
	}
	return rules.AllowedDisruptions(pool.Spec.Disruption.Budgets, nsv1.DisruptionReasonEmpty, len(claims.Items), disrupting, now)
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.busy, name)
	delete(c.deleted, name)
}
