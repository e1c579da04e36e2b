package provisioner

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclaim"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/provisioning/batcher"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Options tune provisioning.
type Options struct {
	BatchIdle time.Duration
	BatchMax  time.Duration
	Solve     scheduling.Options
	// LaunchWorkers bounds parallel launches per cycle (default 64); the AWS
	// provider merges concurrent launches into few CreateFleet calls.
	LaunchWorkers int
	// MaxRounds bounds re-planning after insufficient capacity within one
	// cycle (default provisioning.MaxReplanRounds).
	MaxRounds int
	// NewName names a pool's next NodeClaim (default the pool's name and
	// five random characters; the simulator numbers them so runs repeat).
	NewName func(pool string) string
}

// Provisioner is the provisioning loop, an operator.Singleton: each step
// runs one cycle when the batching window has closed and otherwise says
// when it will.
type Provisioner struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	cluster  *state.Cluster
	launcher *nodeclaim.Launcher
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
	opts     Options
	recent   *recentClaims

	mu     sync.Mutex
	window *batcher.Window
	wake   func()
}

var (
	_ operator.Singleton = (*Provisioner)(nil)
	_ operator.Wakeable  = (*Provisioner)(nil)
)

// New builds the provisioner. launcher may be built with a nil replan: the
// provisioner re-plans itself.
func New(kube client.Client, cloud cloudprovider.CloudProvider, cluster *state.Cluster, launcher *nodeclaim.Launcher,
	clk clock.Clock, rec *events.Recorder, m *metrics.Metrics, opts Options) *Provisioner {
	if opts.LaunchWorkers <= 0 {
		opts.LaunchWorkers = 64
	}
	if opts.MaxRounds <= 0 {
		opts.MaxRounds = provisioning.MaxReplanRounds
	}
	opts.Solve = provisioning.SolveOptions(opts.Solve)
	if opts.NewName == nil {
		opts.NewName = func(pool string) string { return pool + "-" + utilrand.String(5) }
	}
	return &Provisioner{kube: kube, cloud: cloud, cluster: cluster, launcher: launcher,
		window: batcher.NewWindow(opts.BatchIdle, opts.BatchMax), clk: clk, recorder: rec, metrics: m, opts: opts,
		recent: newRecentClaims(clk, 2*time.Minute)}
}

// Name identifies the singleton.
func (p *Provisioner) Name() string { return "provisioner" }

// SetWake is how the driver asks to be woken when a pod arrives.
func (p *Provisioner) SetWake(wake func()) {
	p.mu.Lock()
	p.wake = wake
	p.mu.Unlock()
}

// Trigger adds a pod to the current batch.
func (p *Provisioner) Trigger(podUID string) {
	p.add(func(now time.Time) { p.window.Add(now, podUID) })
}

// TriggerQuiet adds a pod already nominated onto capacity to the batch
// without holding the window open (batcher.Window.AddQuiet): the next cycle
// re-checks its nomination, and pods that arrived for the first time set
// when that cycle comes.
func (p *Provisioner) TriggerQuiet(podUID string) {
	p.add(func(now time.Time) { p.window.AddQuiet(now, podUID) })
}

// TriggerNow adds key to the current batch and closes it at once: the
// interruption handler's call when a node is about to go away.
func (p *Provisioner) TriggerNow(key string) {
	p.add(func(now time.Time) { p.window.Expedite(now, key) })
}

// add changes the window under the lock, then wakes the loop.
func (p *Provisioner) add(change func(now time.Time)) {
	p.mu.Lock()
	change(p.clk.Now())
	wake := p.wake
	p.mu.Unlock()
	if wake != nil {
		wake()
	}
}

// Replan triggers a batch for pods released from a failed claim.
func (p *Provisioner) Replan(pods []types.UID) {
	for _, uid := range pods {
		p.Trigger(string(uid))
	}
}

// Reconcile is one step: a cycle if the batch window has closed, then the
// time until the window closes (zero while it is empty: a trigger wakes us).
func (p *Provisioner) Reconcile(ctx context.Context) (reconcile.Result, error) {
	p.mu.Lock()
	now := p.clk.Now()
	due := p.window.Due(now)
	var keys []string
	if due {
		keys = p.window.Flush()
	}
	p.mu.Unlock()
	var err error
	if due {
		if err = p.Provision(ctx); err != nil {
			err = fmt.Errorf("provisioning cycle of %d triggers: %w", len(keys), err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if deadline, ok := p.window.NextDeadline(); ok {
		return reconcile.Result{RequeueAfter: max(deadline.Sub(p.clk.Now()), time.Nanosecond)}, err
	}
	return reconcile.Result{}, err
}

// Provision runs one cycle: solve, nominate, create, launch, and re-plan
// pods whose claims found no capacity.
func (p *Provisioner) Provision(ctx context.Context) error {
	for round := 0; round < p.opts.MaxRounds; round++ {
		again, err := p.round(ctx)
		if err != nil || !again {
			return err
		}
	}
	return nil
}

// round returns true when some claim was deleted for insufficient capacity.
func (p *Provisioner) round(ctx context.Context) (bool, error) {
	start := p.clk.Now()
	snap, err := p.cluster.Snapshot(ctx)
	if err != nil {
		return false, err
	}
	p.recent.merge(snap)
	gathered := p.pending(snap)
	for _, b := range gathered.Blocked {
		p.recorder.Publish(events.PodBlocked(b.Pod, b.Reason))
	}
	pending := gathered.Pods
	buffered := p.cluster.BufferPods()
	p.metrics.PodsPending.Set(float64(len(pending)))
	p.metrics.PodsPendingOldest.Set(oldestAge(pending, p.clk.Now()))
	if len(pending) == 0 {
		p.metrics.PodsUnschedulable.Set(0)
		if len(buffered) == 0 {
			return false, nil
		}
	}
	in, byName := provisioning.BuildInput(snap, gathered, p.pools(ctx, snap), p.opts.Solve)
	p.metrics.QueueDepth.Set(float64(len(pending)))
	plan := &scheduling.Plan{}
	if len(pending) > 0 {
		if plan, err = scheduling.Solve(in); err != nil {
			return false, fmt.Errorf("solving %d pending pods: %w", len(pending), err)
		}
	}
	// Capacity buffers' virtual pods come last: they get the room the
	// real pods' plan leaves, and new claims for the rest
	// (provisioning.BufferInput). They are never nominated nor reported.
	var buffers *scheduling.Plan
	if len(buffered) > 0 {
		if buffers, err = scheduling.Solve(provisioning.BufferInput(in, plan, buffered)); err != nil {
			return false, fmt.Errorf("solving %d capacity buffer pods: %w", len(buffered), err)
		}
	}
	p.metrics.SchedulingDuration.Observe(p.clk.Since(start).Seconds())
	p.metrics.PodsUnschedulable.Set(float64(len(plan.Unschedulable)))
	for _, n := range plan.Nominations {
		p.cluster.Nominate(n.Pod.UID, n.Node)
		p.recorder.Publish(events.PodNominated(n.Pod, n.Node))
	}
	for _, u := range plan.Unschedulable {
		p.recorder.Publish(events.PodUnschedulable(u.Pod, u.Reason))
	}
	newClaims := plan.NewClaims
	if buffers != nil {
		newClaims = append(append([]*scheduling.ClaimPlan(nil), newClaims...), buffers.NewClaims...)
	}
	claims := p.createAll(ctx, byName, newClaims)
	kv := []any{"pending", len(pending), "lapsed", len(gathered.Lapsed), "held", heldCount(gathered.Held),
		"nominated", len(plan.Nominations), "newClaims", len(claims),
		"unschedulable", len(plan.Unschedulable), "duration", p.clk.Since(start).String()}
	if buffers != nil {
		kv = append(kv, "bufferPods", len(buffered), "bufferClaims", len(buffers.NewClaims), "bufferUnplaced", len(buffers.Unschedulable))
	}
	if len(plan.Unschedulable) > 0 {
		kv = append(kv, "firstUnschedulable", plan.Unschedulable[0].Reason)
	}
	log.FromContext(ctx).Info("provisioning cycle", kv...)
	return p.launchAll(ctx, claims), nil
}

// pending is the cycle's pods (pkg/provisioning.PendingPods); nominations
// that lapsed because their target is ready are dropped here.
func (p *Provisioner) pending(snap *state.Snapshot) provisioning.Pending {
	out := provisioning.PendingPods(snap, p.cluster.Nominated, p.clk.Now())
	for _, uid := range out.Lapsed {
		p.cluster.Forget(uid)
	}
	p.cluster.PruneNominations(snap.Pods)
	// Pods a ProvisioningRequest booked room for wait for it.
	out.Pods, _ = provisioning.WaitingForBooking(out.Pods, p.cluster.BookingLive)
	return out
}

// heldCount is the number of pods nominations hold back.
func heldCount(held map[string][]*corev1.Pod) int {
	n := 0
	for _, pods := range held {
		n += len(pods)
	}
	return n
}

// pools fetches the instance types of every usable pool; a pool whose types
// cannot be fetched is reported and left out of this cycle.
func (p *Provisioner) pools(ctx context.Context, snap *state.Snapshot) map[string][]*catalog.InstanceType {
	out := map[string][]*catalog.InstanceType{}
	for _, np := range provisioning.UsablePools(snap) {
		its, err := p.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			p.recorder.Publish(events.Warning(np, "InstanceTypesUnavailable", "Provision", err.Error()))
			continue
		}
		out[np.Name] = its
	}
	return out
}

// oldestAge is the age in seconds of the oldest pod in pods, 0 for none.
func oldestAge(pods []*corev1.Pod, now time.Time) float64 {
	age := 0.0
	for _, p := range pods {
		age = max(age, now.Sub(p.CreationTimestamp.Time).Seconds())
	}
	return age
}
