package disruptor

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// Defaults of Options.
const (
	DefaultValidationDelay = 15 * time.Second
	DefaultPollInterval    = 10 * time.Second
	DefaultCommandTimeout  = 30 * time.Minute
	// commandPoll is how often a command waiting for its replacements is
	// looked at.
	commandPoll = 5 * time.Second
	// recentTTL is how long a claim this process acted on counts as
	// disrupting although the cache does not show it yet.
	recentTTL = time.Minute
	// replacementGrace is how long a command's replacement may be missing
	// from the cache (it was just created) before it counts as failed.
	replacementGrace = time.Minute
)

// Options tune the controller.
type Options struct {
	// ValidationDelay is how long a plan waits before it is planned again
	// and what still holds is carried out (default 15 s).
	ValidationDelay time.Duration
	// PollInterval is how often the cluster is planned while nothing is
	// pending (default 10 s).
	PollInterval time.Duration
	// CommandTimeout is how long replacements may take to initialize
	// before the disruption is abandoned (default 30 min).
	CommandTimeout time.Duration
	// Plan tunes the planner (minimum savings share, spot-to-spot gate,
	// rebalance mode…).
	Plan disruption.Options
	// InterruptionsOnly carries out only the interruption handler's marks
	// (the Disruption feature gate is off, the interruption handler on).
	InterruptionsOnly bool
}

func (o Options) withDefaults() Options {
	if o.ValidationDelay <= 0 {
		o.ValidationDelay = DefaultValidationDelay
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	return o
}

// Controller is the disruption singleton.
type Controller struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	cluster  *state.Cluster
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
	opts     Options

	mu sync.Mutex
	// pending is the plan awaiting validation.
	pending *pendingPlan
	// recent are claims acted on (deleted, marked), by when.
	recent map[string]time.Time
	// last is the latest plan, handed back to the planner, which reuses
	// it while nothing it reads has changed (disruption.Input.Previous).
	last *disruption.Plan
	// wake asks the driver for a step now (operator.Wakeable).
	wake func()
}

type pendingPlan struct {
	actions []*disruption.Action
	due     time.Time
}

var (
	_ operator.Singleton = (*Controller)(nil)
	_ operator.Wakeable  = (*Controller)(nil)
)

// New builds the controller. kube reads through the manager's cache (with
// the state field indexes) and writes to the API server.
func New(kube client.Client, cloud cloudprovider.CloudProvider, cluster *state.Cluster, clk clock.Clock,
	rec *events.Recorder, m *metrics.Metrics, opts Options) *Controller {
	return &Controller{kube: kube, cloud: cloud, cluster: cluster, clk: clk, recorder: rec, metrics: m,
		opts: opts.withDefaults(), recent: map[string]time.Time{}}
}

// Name implements operator.Singleton.
func (c *Controller) Name() string { return "disruption" }

// SetWake implements operator.Wakeable.
func (c *Controller) SetWake(wake func()) {
	c.mu.Lock()
	c.wake = wake
	c.mu.Unlock()
}

// Wake asks for a step now: the interruption handler's call when it marked
// a node (key names the asker, for logs).
func (c *Controller) Wake(string) {
	c.mu.Lock()
	wake := c.wake
	c.mu.Unlock()
	if wake != nil {
		wake()
	}
}

// Reconcile runs one step: advance the commands in progress, then either
// wait for the pending plan's validation time, validate and carry it out,
// or plan and start a validation.
func (c *Controller) Reconcile(ctx context.Context) (reconcile.Result, error) {
	start := c.clk.Now()
	snap, err := c.cluster.Snapshot(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	waiting, err := c.advance(ctx, snap, start)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := c.deleteUnregistered(ctx, snap, start); err != nil {
		return reconcile.Result{}, err
	}
	idle := c.opts.PollInterval
	if waiting {
		idle = min(idle, commandPoll)
	}
	c.mu.Lock()
	p := c.pending
	c.mu.Unlock()
	if p != nil && start.Before(p.due) && !awaitingMarks(snap) && !c.repairDue(snap, start) {
		return reconcile.Result{RequeueAfter: min(p.due.Sub(start), idle)}, nil
	}
	in, err := c.gather(ctx, snap, start)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	in.Previous = c.last
	c.mu.Unlock()
	plan, err := disruption.Compute(in)
	c.metrics.Disruption.PlanDuration.Observe(c.clk.Since(start).Seconds())
	if err != nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	c.last = plan
	c.mu.Unlock()
	c.observe(snap, plan)
	// Forced actions (expiry, interruptions) and the interruption
	// handler's marks are not validated: the notice, not a second look,
	// decides them.
	voluntary := plan.Actions[:0:0]
	for _, a := range plan.Actions {
		if !a.Forced && a.Method != disruption.MethodInterruption {
			if !c.opts.InterruptionsOnly {
				voluntary = append(voluntary, a)
			}
			continue
		}
		if c.opts.InterruptionsOnly && a.Method != disruption.MethodInterruption {
			continue
		}
		if err := c.execute(ctx, snap, a, start); err != nil {
			return reconcile.Result{}, err
		}
	}
	if p != nil && start.Before(p.due) {
		// Planned for the marks (or a repair) only; the pending plan's
		// validation is still to come.
		return reconcile.Result{RequeueAfter: min(p.due.Sub(start), idle)}, nil
	}
	if p == nil {
		if len(voluntary) == 0 {
			return reconcile.Result{RequeueAfter: idle}, nil
		}
		c.mu.Lock()
		c.pending = &pendingPlan{actions: voluntary, due: start.Add(c.opts.ValidationDelay)}
		c.mu.Unlock()
		log.FromContext(ctx).Info("disruption planned; validating", "actions", len(voluntary), "after", c.opts.ValidationDelay.String())
		return reconcile.Result{RequeueAfter: c.opts.ValidationDelay}, nil
	}
	carry, failed, rest := validated(p.actions, voluntary)
	for _, a := range failed {
		c.validationFailed(a)
	}
	for _, a := range carry {
		if err := c.execute(ctx, snap, a, start); err != nil {
			c.mu.Lock()
			c.pending = nil
			c.mu.Unlock()
			return reconcile.Result{}, err
		}
	}
	// What this plan proposes beyond the validated actions waits for its
	// own validation from now, rather than from a plan made a poll later.
	c.mu.Lock()
	c.pending = nil
	if len(rest) > 0 {
		c.pending = &pendingPlan{actions: rest, due: start.Add(c.opts.ValidationDelay)}
	}
	c.mu.Unlock()
	if len(rest) > 0 {
		log.FromContext(ctx).Info("disruption planned; validating", "actions", len(rest), "after", c.opts.ValidationDelay.String())
		return reconcile.Result{RequeueAfter: min(c.opts.ValidationDelay, idle)}, nil
	}
	return reconcile.Result{RequeueAfter: idle}, nil
}

// validated splits the plan made at validation time (after) by the plan
// made ValidationDelay earlier (before): carry are after's actions that
// before also had (same method, reason, candidates and number of
// replacements), in after's order; failed are before's actions after no
// longer has; rest are after's new actions, which still need validating.
//
// Carrying out a subset of after is safe: an action of a plan only ever
// loses from the actions before it (their candidates are no destination,
// the pods they move take room, they use the budget and the pools'
// limits; replacements offer no room to later actions), so an action
// planned after ones that are left out holds with more room and budget, not
// less. A new drifted node in one pool therefore no longer holds back an
// expiry validated in another.
func validated(before, after []*disruption.Action) (carry, failed, rest []*disruption.Action) {
	was := make(map[string]bool, len(before))
	for _, a := range before {
		was[key(a)] = true
	}
	now := make(map[string]bool, len(after))
	for _, a := range after {
		k := key(a)
		now[k] = true
		if was[k] {
			carry = append(carry, a)
		} else {
			rest = append(rest, a)
		}
	}
	for _, a := range before {
		if !now[key(a)] {
			failed = append(failed, a)
		}
	}
	return carry, failed, rest
}

func key(a *disruption.Action) string {
	names := make([]string, 0, len(a.Candidates))
	for _, c := range a.Candidates {
		names = append(names, c.Claim.Name)
	}
	sort.Strings(names)
	return string(a.Method) + "/" + string(a.Reason) + "/" + strings.Join(names, ",") + "/" + strconv.Itoa(len(a.Replacements))
}

// markRecent remembers claims this process acted on.
func (c *Controller) markRecent(name string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recent[name] = now
}

// forgetRecent drops a claim from the recently acted on.
func (c *Controller) forgetRecent(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.recent, name)
}

// recentlyActed reports claims acted on within recentTTL (dropping older ones).
func (c *Controller) recentlyActed(now time.Time) func(string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := map[string]bool{}
	for name, at := range c.recent {
		if now.Sub(at) >= recentTTL {
			delete(c.recent, name)
			continue
		}
		live[name] = true
	}
	return func(name string) bool { return live[name] }
}

// awaitingMarks reports whether a claim the interruption handler marked
// waits for its command: the planner runs for it even while a plan awaits
// validation.
func awaitingMarks(snap *state.Snapshot) bool {
	for _, cl := range snap.NodeClaims {
		if cl.DeletionTimestamp.IsZero() && cl.Annotations[nsv1.AnnotationDisruptionCommand] == "" && interruption.MarkOf(cl).Marked() {
			return true
		}
	}
	return false
}

// repairDue reports whether node repair may replace a node now (the
// planner's rule, disruption.Unhealthy): a forced action, so the planner
// runs for it even while a plan awaits validation.
func (c *Controller) repairDue(snap *state.Snapshot, now time.Time) bool {
	if !c.opts.Plan.NodeRepair {
		return false
	}
	policies := disruption.DefaultRepairPolicies()
	for _, cl := range snap.NodeClaims {
		if !cl.DeletionTimestamp.IsZero() || cl.Annotations[nsv1.AnnotationDisruptionCommand] != "" {
			continue
		}
		if n := snap.NodeByID[cl.Status.ProviderID]; n != nil {
			if h, ok := disruption.Unhealthy(n, policies); ok && !h.Due.After(now) {
				return true
			}
		}
	}
	return false
}
