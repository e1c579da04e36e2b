package interruption

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// drainPoll is how often a deleted claim is looked at until its node has
// drained, for the drain latency.
const drainPoll = 2 * time.Second

// Disrupted deletes NodeClaims the queue marked Disrupting once their pods
// have somewhere to go, or when the instance's deadline forces it.
type Disrupted struct {
	Deps
	mode interruption.RebalanceMode

	mu sync.Mutex
	// seen remembers, per claim name, the latencies already observed.
	seen map[string]*observed
}

// observed is what was measured of one claim (uid): when its notice came,
// whether its pods' places were planned and its node drained.
type observed struct {
	uid              types.UID
	noticed          time.Time
	planned, drained bool
}

// NewDisrupted builds the reconciler; mode is the rebalance setting.
func NewDisrupted(deps Deps, mode interruption.RebalanceMode) *Disrupted {
	return &Disrupted{Deps: deps, mode: mode, seen: map[string]*observed{}}
}

// Controller declares it: Disrupting claims, woken again when any claim
// becomes ready (it may be a replacement).
func (d *Disrupted) Controller() operator.Controller {
	return operator.Controller{
		Name:         "interruption.disrupted",
		For:          &nsv1.NodeClaim{},
		ForPredicate: func(o client.Object) bool { return interrupted(o.(*nsv1.NodeClaim)) },
		Watches: []operator.Watch{{
			Object: &nsv1.NodeClaim{},
			Predicate: func(o client.Object) bool {
				return lifecycle.IsTrue(o.(*nsv1.NodeClaim).Status.Conditions, nsv1.ConditionInitialized)
			},
			Map: d.interruptedClaims,
		}},
		// One at a time: rebalance drains are counted against the budget.
		Workers:    1,
		Reconciler: d,
	}
}

// interrupted reports whether the handler marked claim.
func interrupted(claim *nsv1.NodeClaim) bool {
	c := meta.FindStatusCondition(claim.Status.Conditions, nsv1.ConditionDisrupting)
	return c != nil && c.Status == metav1.ConditionTrue && interruption.IsInterruptionReason(c.Reason)
}

func (d *Disrupted) interruptedClaims(ctx context.Context, _ client.Object) []reconcile.Request {
	var list nsv1.NodeClaimList
	// Read only, on every watched event: the cache's own claims.
	if err := d.Kube.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if interrupted(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// Reconcile decides about one Disrupting claim.
func (d *Disrupted) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &nsv1.NodeClaim{}
	if err := d.Kube.Get(ctx, req.NamespacedName, claim); err != nil {
		if apierrors.IsNotFound(err) {
			d.gone(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !interrupted(claim) {
		return reconcile.Result{}, nil
	}
	node, err := nodeOf(ctx, d.Kube, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	var pods []*corev1.Pod
	if node != nil {
		if pods, err = state.PodsOnNode(ctx, d.Kube, node.Name); err != nil {
			return reconcile.Result{}, err
		}
	}
	obs := d.observe(claim)
	// The node may have registered after the notice: keep new pods off it.
	if err := d.taint(ctx, node, obs.noticed); err != nil {
		return reconcile.Result{}, err
	}
	if !claim.DeletionTimestamp.IsZero() {
		if len(interruption.Moved(pods)) > 0 {
			return reconcile.Result{RequeueAfter: drainPoll}, nil
		}
		d.drained(claim.Name)
		return reconcile.Result{}, nil
	}
	mark := markOf(claim)
	self := []string{claim.Name}
	if node != nil {
		self = append(self, node.Name)
	}
	in := interruption.Input{Mark: mark, Mode: d.mode, Self: self, Pods: pods, Nominated: d.Nominations.Nominated,
		Ready: func(target string) bool { return d.ready(ctx, target) }, Now: d.Clock.Now()}
	if mark.Reason == nsv1.DisruptingReasonRebalanceRecommendation && d.mode == interruption.RebalanceDrain {
		if in.BudgetAllows, err = d.budgetAllows(ctx, claim); err != nil {
			return reconcile.Result{}, err
		}
	}
	v := interruption.Decide(in)
	if v.Planned && d.planned(obs) {
		moved := interruption.Moved(pods)
		d.Recorder.Publish(events.ReplacementPlanned(claim, fmt.Sprintf("every pod of the node has a place planned (%d to move): %s",
			len(moved), targets(moved, d.Nominations.Nominated))))
	}
	if v.Wake {
		d.wake("interruption/" + claim.Name)
	}
	if v.Renew {
		d.renew("interruption/" + claim.Name)
	}
	if !v.Delete {
		if v.Waiting != "" {
			d.Recorder.Publish(events.InterruptionWaiting(claim, v.Waiting))
		}
		return reconcile.Result{RequeueAfter: v.RequeueAfter}, nil
	}
	if err := d.drain(ctx, claim, node, mark, v.Why); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: drainPoll}, nil
}

// drain deletes the claim; the termination controller taints and drains
// its node through the Eviction API. With a deadline, the termination
// timestamp makes the drain delete what is left in time.
func (d *Disrupted) drain(ctx context.Context, claim *nsv1.NodeClaim, node *corev1.Node, mark interruption.Mark, why string) error {
	if !mark.Deadline.IsZero() {
		if err := d.tightenTermination(ctx, claim, mark.Deadline); err != nil {
			return err
		}
	}
	if err := d.Kube.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting disrupted nodeclaim %s: %w", claim.Name, err)
	}
	publish(d.Recorder, claim, node, func(o eventTarget) events.Event { return events.InterruptionDrain(o, "draining: "+why) })
	return nil
}

// ready reports whether a nomination target (a claim or node name) runs
// pods now: an initialized claim, or a Ready node, neither going away.
func (d *Disrupted) ready(ctx context.Context, target string) bool {
	claim := &nsv1.NodeClaim{}
	if err := d.Kube.Get(ctx, types.NamespacedName{Name: target}, claim); err == nil {
		return claim.DeletionTimestamp.IsZero() && !provisioning.Disrupted(claim) &&
			lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionInitialized)
	}
	node := &corev1.Node{}
	if err := d.Kube.Get(ctx, types.NamespacedName{Name: target}, node); err != nil || !node.DeletionTimestamp.IsZero() {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&nsv1.DisruptedTaint) || t.MatchTaint(&nsv1.UnregisteredTaint) {
			return false
		}
	}
	if c, err := state.ClaimForNode(ctx, d.Kube, node); err != nil || (c != nil && (provisioning.Disrupted(c) || !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized))) {
		return false
	}
	c := lifecycle.NodeCondition(node, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// budgetAllows reports whether the claim's NodePool may disrupt one more
// node for reason Rebalance now.
func (d *Disrupted) budgetAllows(ctx context.Context, claim *nsv1.NodeClaim) (bool, error) {
	pool := &nsv1.NodePool{}
	name := claim.Labels[nsv1.LabelNodePool]
	if err := d.Kube.Get(ctx, types.NamespacedName{Name: name}, pool); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	var claims nsv1.NodeClaimList
	if err := d.Kube.List(ctx, &claims, client.MatchingLabels{nsv1.LabelNodePool: name}); err != nil {
		return false, fmt.Errorf("listing nodeclaims of nodepool %s: %w", name, err)
	}
	// Each claim's node, for its readiness (a node not Ready uses up the
	// budget); by name, as a node's labels may not be synced yet.
	var nodes []*corev1.Node
	for i := range claims.Items {
		nodeName := claims.Items[i].Status.NodeName
		if nodeName == "" {
			continue
		}
		node := &corev1.Node{}
		if err := d.Kube.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return false, fmt.Errorf("reading node %s: %w", nodeName, err)
		}
		nodes = append(nodes, node)
	}
	allowed, err := interruption.RebalanceBudget(pool, ptrs(claims.Items), nodes, d.Clock.Now())
	if err != nil {
		d.Recorder.Publish(events.Warning(pool, "BudgetInvalid", "Disrupt", err.Error()))
	}
	return allowed > 0, nil
}

// ptrs points at each item of a listed slice.
func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// observe returns the claim's record, made on first sight.
func (d *Disrupted) observe(claim *nsv1.NodeClaim) *observed {
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.seen[claim.Name]
	if o == nil || o.uid != claim.UID {
		o = &observed{uid: claim.UID}
		if t, ok := noticedAt(claim); ok {
			o.noticed = t
		}
		d.seen[claim.Name] = o
	}
	return o
}

// planned records the notice-to-planned latency once; it reports whether
// this was the first time.
func (d *Disrupted) planned(o *observed) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if o.planned {
		return false
	}
	o.planned = true
	if !o.noticed.IsZero() {
		d.Metrics.Interruption.ReplacementLatency.Observe(d.Clock.Since(o.noticed).Seconds())
	}
	return true
}

// drained records the notice-to-drained latency once.
func (d *Disrupted) drained(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.seen[name]
	if o == nil || o.drained {
		return
	}
	o.drained = true
	if !o.noticed.IsZero() {
		d.Metrics.Interruption.DrainLatency.Observe(d.Clock.Since(o.noticed).Seconds())
	}
}

// gone forgets a claim that no longer exists; if its drain was not seen to
// finish, it finished now.
func (d *Disrupted) gone(name string) {
	d.drained(name)
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.seen, name)
}

// targets says where moved pods are planned, as "2 on default-x7k2p, 1 on
// ip-10-0-1-2" (targets in name order).
func targets(pods []*corev1.Pod, nominated func(types.UID) (string, bool)) string {
	on := map[string]int{}
	for _, p := range pods {
		if t, ok := nominated(p.UID); ok {
			on[t]++
		}
	}
	names := make([]string, 0, len(on))
	for t := range on {
		names = append(names, t)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, t := range names {
		parts[i] = fmt.Sprintf("%d on %s", on[t], t)
	}
	return strings.Join(parts, ", ")
}
