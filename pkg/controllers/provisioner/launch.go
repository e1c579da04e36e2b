package provisioner

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclaim"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// createAll makes the NodeClaims for the planned claims, each owned by its
// pool with its requirements narrowed to the planned options, and nominates
// their pods; the caller gets the launch marks, taken before the claims
// exist. It writes up to LaunchWorkers at once: a cycle
// of 50 claims on an API server that answers in 50 ms would otherwise spend
// 2.5 s writing them one by one. Names are drawn, and the claims are
// nominated, counted and announced, in plan order on this goroutine, so a
// cycle's outcome does not depend on which write finished first.
func (p *Provisioner) createAll(ctx context.Context, byName map[string]*nsv1.NodePool, plans []*scheduling.ClaimPlan) []*nsv1.NodeClaim {
	type job struct {
		pool  *nsv1.NodePool
		plan  *scheduling.ClaimPlan
		claim *nsv1.NodeClaim
		err   error
	}
	jobs := make([]*job, 0, len(plans))
	for _, cp := range plans {
		if pool := byName[cp.NodePool]; pool != nil {
			claim := provisioning.NewNodeClaim(pool, cp, p.opts.NewName(pool.Name))
			p.cluster.StartLaunch(claim.Name)
			jobs = append(jobs, &job{pool: pool, plan: cp, claim: claim})
		}
	}
	write := func(j *job) {
		if err := p.kube.Create(ctx, j.claim); err != nil {
			p.cluster.EndLaunch(j.claim.Name)
			j.err = fmt.Errorf("creating nodeclaim for nodepool %s: %w", j.pool.Name, err)
		}
	}
	operator.Each(p.opts.LaunchWorkers, len(jobs), func(i int) { write(jobs[i]) })
	claims := make([]*nsv1.NodeClaim, 0, len(jobs))
	for _, j := range jobs {
		if j.err != nil {
			log.FromContext(ctx).Error(j.err, "creating nodeclaim", "nodepool", j.plan.NodePool, "pods", len(j.plan.Pods))
			continue
		}
		p.created(j.pool, j.plan, j.claim)
		claims = append(claims, j.claim)
	}
	return claims
}

// created records a claim the API server accepted: its pods are nominated
// to it, and it is counted and announced.
func (p *Provisioner) created(pool *nsv1.NodePool, cp *scheduling.ClaimPlan, claim *nsv1.NodeClaim) {
	buffered := 0
	for _, pod := range cp.Pods {
		if provisioning.IsBufferPod(pod) {
			buffered++ // a capacity buffer's room: no pod to nominate
			continue
		}
		p.cluster.Nominate(pod.UID, claim.Name)
	}
	p.recent.add(claim)
	p.metrics.NodeClaimsCreated.WithLabelValues(pool.Name, "provisioning").Inc()
	what := fmt.Sprintf("for %d pods", len(cp.Pods)-buffered)
	if buffered > 0 {
		what += fmt.Sprintf(" and %d capacity buffer chunks", buffered)
	}
	p.recorder.Publish(events.Normal(claim, "Created", "Provision", fmt.Sprintf("%s, %d launch options from $%.4f/h",
		what, len(cp.Options), cp.Price())))
}

// launchAll launches the claims together (their launch marks are held):
// one CreateAll, so claims asking for the same thing share a CreateFleet
// call, then each result is recorded and persisted, up to LaunchWorkers at
// once. Claims of a pool that limits a resource launch within the pool's
// turn (nodeclaim.Launcher.PoolTurn); when its limits are tight (Tight),
// they launch first, one at a time in plan order, each trimmed to what the
// launches before it leave. It reports whether any claim was deleted for
// insufficient capacity or its pool's limits.
func (p *Provisioner) launchAll(ctx context.Context, claims []*nsv1.NodeClaim) bool {
	if len(claims) == 0 {
		return false
	}
	var (
		mu      sync.Mutex
		deleted bool
	)
	free, limited, pools, done, err := p.turns(ctx, claims)
	defer done()
	if err != nil {
		// The claims stay unlaunched; the lifecycle controller retries them.
		log.FromContext(ctx).Error(err, "launching nodeclaims")
		for _, claim := range claims {
			p.cluster.EndLaunch(claim.Name)
		}
		return false
	}
	for i, claim := range limited {
		out, err := p.launchTrimmed(ctx, pools[i], claim)
		if err != nil {
			log.FromContext(ctx).Error(err, "launching nodeclaim", "nodeclaim", claim.Name)
		}
		if out == nodeclaim.Deleted {
			p.recent.remove(claim.Name)
			deleted = true
		}
	}
	claims = free
	if len(claims) == 0 {
		return deleted
	}
	results := p.cloud.CreateAll(ctx, claims)
	operator.Each(p.opts.LaunchWorkers, len(claims), func(i int) {
		claim := claims[i]
		defer p.cluster.EndLaunch(claim.Name)
		out, err := p.record(ctx, claim, results[i])
		if err != nil {
			// The lifecycle controller retries it; liveness bounds that.
			log.FromContext(ctx).Error(err, "launching nodeclaim", "nodeclaim", claim.Name)
		}
		if out == nodeclaim.Deleted {
			p.recent.remove(claim.Name)
			mu.Lock()
			deleted = true
			mu.Unlock()
		}
	})
	return deleted
}

// turns starts the launch turn of every pool of claims that limits a
// resource (in name order) and sorts the claims: free ones launch together
// in one CreateAll, limited ones (with their pools) one at a time, trimmed,
// in plan order — those of pools whose limits are tight. done ends the
// turns once the launches are recorded.
func (p *Provisioner) turns(ctx context.Context, claims []*nsv1.NodeClaim) (free, limited []*nsv1.NodeClaim, pools []*nsv1.NodePool, done func(), err error) {
	var ends []func()
	done = func() {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i]()
		}
	}
	byPool := map[string][]*nsv1.NodeClaim{}
	var names []string
	for _, c := range claims {
		n := c.Labels[nsv1.LabelNodePool]
		if _, ok := byPool[n]; !ok {
			names = append(names, n)
		}
		byPool[n] = append(byPool[n], c)
	}
	sort.Strings(names)
	tight := map[string]*nsv1.NodePool{}
	for _, n := range names {
		np, end, err := p.launcher.PoolTurn(ctx, byPool[n][0])
		ends = append(ends, end)
		if err != nil {
			return nil, nil, nil, done, err
		}
		if np == nil {
			continue
		}
		t, err := p.launcher.Tight(ctx, np, byPool[n])
		if err != nil {
			return nil, nil, nil, done, err
		}
		if t {
			tight[n] = np
		}
	}
	for _, c := range claims {
		if np := tight[c.Labels[nsv1.LabelNodePool]]; np != nil {
			limited, pools = append(limited, c), append(pools, np)
		} else {
			free = append(free, c)
		}
	}
	return free, limited, pools, done, nil
}

// launchTrimmed launches one claim of a tight pool within its turn (its
// launch mark is held) and persists the result, as record does.
func (p *Provisioner) launchTrimmed(ctx context.Context, np *nsv1.NodePool, claim *nsv1.NodeClaim) (nodeclaim.Outcome, error) {
	defer p.cluster.EndLaunch(claim.Name)
	base := claim.DeepCopy()
	out, err := p.launcher.LaunchTrimmed(ctx, np, claim)
	if out == nodeclaim.Deleted {
		return out, nil
	}
	return p.persist(ctx, base, claim, out, err)
}

// record writes one claim's launch result.
func (p *Provisioner) record(ctx context.Context, claim *nsv1.NodeClaim, r cloudprovider.CreateResult) (nodeclaim.Outcome, error) {
	base := claim.DeepCopy()
	out, err := p.launcher.Record(ctx, claim, r.Claim, r.Err)
	if out == nodeclaim.Deleted {
		return out, nil
	}
	if out == nodeclaim.Launched {
		p.launcher.Recorded(claim)
	}
	return p.persist(ctx, base, claim, out, err)
}

// persist writes a launch's outcome (out, err) onto claim, base being
// claim before the launch.
func (p *Provisioner) persist(ctx context.Context, base, claim *nsv1.NodeClaim, out nodeclaim.Outcome, err error) (nodeclaim.Outcome, error) {
	now := metav1.NewTime(p.clk.Now())
	lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.ClaimReady(claim.Status.Conditions), claim.Generation, now)
	if perr := nodeclaim.Persist(ctx, p.kube, base, claim); perr != nil {
		if out == nodeclaim.Launched {
			p.cluster.LaunchNotRecorded(claim.Name)
		}
		return out, perr
	}
	p.recent.add(claim)
	return out, err
}

// recentClaims holds the claims this process created until the cache shows
// them, so the next cycle's usage and in-flight capacity include them.
type recentClaims struct {
	clk clock.Clock
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]recentClaim
	// gone are claims this process deleted, hidden from snapshots until the
	// cache shows the deletion: their capacity must not attract pods.
	gone map[string]time.Time
}

type recentClaim struct {
	claim *nsv1.NodeClaim
	at    time.Time
}

func newRecentClaims(clk clock.Clock, ttl time.Duration) *recentClaims {
	return &recentClaims{clk: clk, ttl: ttl, m: map[string]recentClaim{}, gone: map[string]time.Time{}}
}

func (r *recentClaims) add(c *nsv1.NodeClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[c.Name] = recentClaim{claim: c.DeepCopy(), at: r.clk.Now()}
}

func (r *recentClaims) remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
	r.gone[name] = r.clk.Now()
}

// merge adds to snap the recent claims it lacks, replaces stale cached
// copies with ours when ours has launched, and forgets entries the cache has
// caught up with or that expired.
func (r *recentClaims) merge(snap *state.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clk.Now()
	kept := snap.NodeClaims[:0]
	for _, c := range snap.NodeClaims {
		if at, ok := r.gone[c.Name]; ok && c.DeletionTimestamp.IsZero() && now.Sub(at) < r.ttl {
			continue
		}
		kept = append(kept, c)
	}
	snap.NodeClaims = kept
	for name, at := range r.gone {
		if now.Sub(at) >= r.ttl {
			delete(r.gone, name)
		}
	}
	seen := map[string]int{}
	for i, c := range snap.NodeClaims {
		seen[c.Name] = i
	}
	for name, rc := range r.m {
		if now.Sub(rc.at) > r.ttl {
			delete(r.m, name)
			continue
		}
		i, ok := seen[name]
		if !ok {
			snap.NodeClaims = append(snap.NodeClaims, rc.claim)
			continue
		}
		cached := snap.NodeClaims[i]
		if cached.Status.ProviderID == "" && rc.claim.Status.ProviderID != "" {
			snap.NodeClaims[i] = rc.claim
			continue
		}
		delete(r.m, name)
	}
}
