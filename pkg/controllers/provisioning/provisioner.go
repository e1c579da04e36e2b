package provisioning

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	ncl "github.com/nodesmith/nodesmith/pkg/controllers/nodeclaim/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	rules "github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
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
	// MaxRounds bounds re-planning after insufficient capacity within one cycle (default 3).
	MaxRounds int
}

// Provisioner is the leader-elected provisioning loop (a manager Runnable).
type Provisioner struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	cluster  *state.Cluster
	launcher *ncl.Launcher
	batcher  *batcher.Batcher
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
	opts     Options
	recent   *recentClaims
}

// New builds the provisioner. launcher may be built with a nil replan: the
// provisioner re-plans itself.
func New(kube client.Client, cloud cloudprovider.CloudProvider, cluster *state.Cluster, launcher *ncl.Launcher,
	clk clock.Clock, rec *events.Recorder, m *metrics.Metrics, opts Options) *Provisioner {
	if opts.LaunchWorkers <= 0 {
		opts.LaunchWorkers = 64
	}
	if opts.MaxRounds <= 0 {
		opts.MaxRounds = 3
	}
	if opts.Solve.MaxOptionsPerClaim <= 0 {
		// Hand the provider a wide choice: it cuts to what one CreateFleet
		// takes while keeping minValues satisfied, which a plain price cut
		// here could not (the cheapest 60 options of a large claim may span
		// only one or two families).
		opts.Solve.MaxOptionsPerClaim = 240
	}
	return &Provisioner{kube: kube, cloud: cloud, cluster: cluster, launcher: launcher,
		batcher: batcher.New(clk, opts.BatchIdle, opts.BatchMax), clk: clk, recorder: rec, metrics: m, opts: opts,
		recent: newRecentClaims(clk, 2*time.Minute)}
}

// Trigger adds a pod to the current batch.
func (p *Provisioner) Trigger(podUID string) { p.batcher.Trigger(podUID) }

// Replan triggers a batch for pods released from a failed claim.
func (p *Provisioner) Replan(pods []types.UID) {
	for _, uid := range pods {
		p.batcher.Trigger(string(uid))
	}
}

// NeedLeaderElection: only the leader launches.
func (p *Provisioner) NeedLeaderElection() bool { return true }

// Start runs one provisioning cycle per closed batch until ctx ends.
func (p *Provisioner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("provisioner")
	for {
		keys := p.batcher.Wait(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err := p.Provision(ctx); err != nil {
			logger.Error(err, "provisioning cycle failed", "triggers", len(keys))
		}
	}
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
	pending, nominated := p.pending(snap)
	p.metrics.PodsPending.Set(float64(len(pending)))
	if len(pending) == 0 {
		p.metrics.PodsUnschedulable.Set(0)
		return false, nil
	}
	pools, byName := p.pools(ctx, snap)
	in := scheduling.Input{
		Pods:       pending,
		Nodes:      existingNodes(snap, nominated),
		NodePools:  pools,
		DaemonSets: snap.DaemonSets,
		Options:    p.opts.Solve,
	}
	p.metrics.QueueDepth.Set(float64(len(pending)))
	plan, err := scheduling.Solve(in)
	p.metrics.SchedulingDuration.Observe(p.clk.Since(start).Seconds())
	if err != nil {
		return false, fmt.Errorf("solving %d pending pods: %w", len(pending), err)
	}
	p.metrics.PodsUnschedulable.Set(float64(len(plan.Unschedulable)))
	for _, n := range plan.Nominations {
		p.cluster.Nominate(n.Pod.UID, n.Node)
		p.recorder.Publish(events.PodNominated(n.Pod, n.Node))
	}
	for _, u := range plan.Unschedulable {
		p.recorder.Publish(events.PodUnschedulable(u.Pod, u.Reason))
	}
	claims := make([]*nsv1.NodeClaim, 0, len(plan.NewClaims))
	for _, cp := range plan.NewClaims {
		pool := byName[cp.NodePool]
		if pool == nil {
			continue
		}
		claim, err := p.create(ctx, pool, cp)
		if err != nil {
			log.FromContext(ctx).Error(err, "creating nodeclaim", "nodepool", cp.NodePool, "pods", len(cp.Pods))
			continue
		}
		claims = append(claims, claim)
	}
	kv := []any{"pending", len(pending), "nominated", len(plan.Nominations), "newClaims", len(claims),
		"unschedulable", len(plan.Unschedulable), "duration", p.clk.Since(start).String()}
	if len(plan.Unschedulable) > 0 {
		kv = append(kv, "firstUnschedulable", plan.Unschedulable[0].Reason)
	}
	log.FromContext(ctx).Info("provisioning cycle", kv...)
	return p.launchAll(ctx, claims), nil
}

// pending returns the provisionable pods not held by a nomination, and the
// nominated ones grouped by target so their capacity counts as taken.
func (p *Provisioner) pending(snap *state.Snapshot) ([]*corev1.Pod, map[string][]*corev1.Pod) {
	ready := readySince(snap)
	now := p.clk.Now()
	var out []*corev1.Pod
	nominated := map[string][]*corev1.Pod{}
	for _, pod := range snap.Pods {
		if ok, _ := rules.IsProvisionable(pod); !ok {
			continue
		}
		if target, ok := p.cluster.Nominated(pod.UID); ok {
			// Once its target has been ready for a while, kube-scheduler has
			// had its chance: a pod still pending lost its place to another
			// pod and is planned again now rather than at nomination expiry.
			if at, isReady := ready[target]; !isReady || now.Sub(at) < nominationGrace {
				nominated[target] = append(nominated[target], pod)
				continue
			}
			p.cluster.Forget(pod.UID)
		}
		out = append(out, pod)
	}
	return out, nominated
}

// nominationGrace is how long kube-scheduler gets to bind pods to a node
// that became ready for them.
const nominationGrace = 15 * time.Second

// readySince maps claim and node names to when the claim initialized.
func readySince(snap *state.Snapshot) map[string]time.Time {
	out := map[string]time.Time{}
	for _, c := range snap.NodeClaims {
		cond := meta.FindStatusCondition(c.Status.Conditions, nsv1.ConditionInitialized)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			continue
		}
		out[c.Name] = cond.LastTransitionTime.Time
		if c.Status.NodeName != "" {
			out[c.Status.NodeName] = cond.LastTransitionTime.Time
		}
	}
	return out
}

// pools builds the solver's view of every usable pool, with usage computed
// from the claims we know of (status lags behind our own launches).
func (p *Provisioner) pools(ctx context.Context, snap *state.Snapshot) ([]*scheduling.NodePool, map[string]*nsv1.NodePool) {
	usage := map[string][]*nsv1.NodeClaim{}
	for _, c := range snap.NodeClaims {
		if c.DeletionTimestamp.IsZero() {
			usage[c.Labels[nsv1.LabelNodePool]] = append(usage[c.Labels[nsv1.LabelNodePool]], c)
		}
	}
	var out []*scheduling.NodePool
	byName := map[string]*nsv1.NodePool{}
	for _, np := range snap.NodePools {
		if !np.DeletionTimestamp.IsZero() {
			continue
		}
		if c := meta.FindStatusCondition(np.Status.Conditions, nsv1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse {
			continue
		}
		types, err := p.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			p.recorder.Publish(events.Warning(np, "InstanceTypesUnavailable", "Provision", err.Error()))
			continue
		}
		sp := scheduling.NodePoolFromAPI(np, types)
		sp.Labels[nsv1.LabelNodePool] = np.Name
		used, n := usageOf(usage[np.Name])
		used[nsv1.ResourceNodes] = *resourceInt(n)
		sp.Usage = used
		out = append(out, sp)
		byName[np.Name] = np
	}
	return out, byName
}

// existingNodes are the nodes and in-flight claims the solver may fill.
func existingNodes(snap *state.Snapshot, nominated map[string][]*corev1.Pod) []*scheduling.ExistingNode {
	var out []*scheduling.ExistingNode
	registered := map[string]bool{}
	for _, n := range snap.Nodes {
		claim := snap.ClaimByNode[n.Name]
		en := &scheduling.ExistingNode{
			Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Allocatable: n.Status.Allocatable,
			Pods:              append(append([]*corev1.Pod{}, snap.PodsByNode[n.Name]...), nominated[n.Name]...),
			MarkedForDeletion: !n.DeletionTimestamp.IsZero() || hasTaint(n, nsv1.DisruptedTaint),
		}
		if claim != nil {
			registered[claim.Name] = true
			en.Pods = append(en.Pods, nominated[claim.Name]...)
			en.MarkedForDeletion = en.MarkedForDeletion || !claim.DeletionTimestamp.IsZero()
			en.InFlight = !rules.IsTrue(claim.Status.Conditions, nsv1.ConditionInitialized)
		}
		out = append(out, en)
	}
	for _, c := range snap.NodeClaims {
		if registered[c.Name] || !c.DeletionTimestamp.IsZero() {
			continue
		}
		alloc := c.Status.Allocatable
		if len(alloc) == 0 {
			alloc = c.Spec.Resources.Requests
		}
		out = append(out, &scheduling.ExistingNode{
			Name: c.Name, Labels: claimLabels(c), Taints: c.Spec.Taints, Allocatable: alloc,
			Pods: nominated[c.Name], InFlight: true,
		})
	}
	return out
}

// claimLabels are the labels the claim's node will carry: its own, plus
// every requirement pinned to a single value.
func claimLabels(c *nsv1.NodeClaim) map[string]string {
	out := map[string]string{}
	for _, r := range c.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			out[r.Key] = r.Values[0]
		}
	}
	for k, v := range c.Labels {
		out[k] = v
	}
	return out
}

func hasTaint(n *corev1.Node, t corev1.Taint) bool {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}
