package nodeclaim

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// Limits at launch. The solver charges a claim what it is expected to
// launch as, not its largest option (scheduling.ClaimCharge), so the launch
// must keep to the limit itself: a claim of a pool that limits a resource
// launches with only the options that fit what the pool's launched
// capacity leaves, minValues met among them, or not at all
// (provisioning.TrimClaim), and the pool's launches go one at a time, each
// counting the ones before it.

// launchedTTL bounds how long a launch this process recorded is counted
// for a claim the cache does not show yet (or any more).
const launchedTTL = 10 * time.Minute

// cacheLag is how long a launch is counted while the cache does not list
// its claim at all: longer than the informer takes to show a new claim.
const cacheLag = 15 * time.Second

// launchLimits serialises the launches of each limited pool and remembers
// what they launched until the cache shows it.
type launchLimits struct {
	clk   clock.Clock
	mu    sync.Mutex
	pools map[string]*sync.Mutex
	// recent: by pool and claim, the capacity launched and when.
	recent map[string]map[string]launchedCap
	// prunedAt: by pool, when launched last dropped expired entries.
	prunedAt map[string]time.Time
}

// pruneEvery is how often launched drops a pool's expired entries; seen
// ignores them meanwhile. Pruning at every launch would make a cycle of n
// launches cost n² (5,559 claims: 15 million map steps).
const pruneEvery = time.Minute

type launchedCap struct {
	capacity corev1.ResourceList
	at       time.Time
}

func newLaunchLimits(clk clock.Clock) *launchLimits {
	return &launchLimits{clk: clk, pools: map[string]*sync.Mutex{}, recent: map[string]map[string]launchedCap{},
		prunedAt: map[string]time.Time{}}
}

func (ll *launchLimits) lock(pool string) func() {
	ll.mu.Lock()
	m := ll.pools[pool]
	if m == nil {
		m = &sync.Mutex{}
		ll.pools[pool] = m
	}
	ll.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// launched records claim's launched capacity (its status, just filled).
func (ll *launchLimits) launched(claim *nsv1.NodeClaim) {
	pool := claim.Labels[nsv1.LabelNodePool]
	if pool == "" || len(claim.Status.Capacity) == 0 {
		return
	}
	ll.mu.Lock()
	defer ll.mu.Unlock()
	m := ll.recent[pool]
	if m == nil {
		m = map[string]launchedCap{}
		ll.recent[pool] = m
	}
	now := ll.clk.Now()
	if now.Sub(ll.prunedAt[pool]) >= pruneEvery {
		for name, e := range m {
			if now.Sub(e.at) >= launchedTTL {
				delete(m, name)
			}
		}
		ll.prunedAt[pool] = now
	}
	m[claim.Name] = launchedCap{capacity: claim.Status.Capacity.DeepCopy(), at: now}
}

// seen is what the pool's recent launches add to listed: entries the cache
// has caught up with (the claim shows its capacity) or that expired are
// forgotten.
func (ll *launchLimits) seen(pool string, listed []*nsv1.NodeClaim) map[string]corev1.ResourceList {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	m := ll.recent[pool]
	isListed := make(map[string]bool, len(listed))
	for _, c := range listed {
		isListed[c.Name] = true
		if len(c.Status.Capacity) > 0 {
			delete(m, c.Name)
		}
	}
	out := map[string]corev1.ResourceList{}
	now := ll.clk.Now()
	for name, e := range m {
		// A launch the cache does not list after cacheLag is a claim that
		// is gone (deleted, consolidated, interrupted): counting it would
		// refuse every launch of the pool until launchedTTL, while the
		// solver, which sees the claim gone, plans them again at once.
		if now.Sub(e.at) >= launchedTTL || (!isListed[name] && now.Sub(e.at) >= cacheLag) {
			delete(m, name)
			continue
		}
		out[name] = e.capacity
	}
	return out
}

func resourceLimited(np *nsv1.NodePool) bool {
	for name := range np.Spec.Limits {
		if name != nsv1.ResourceNodes {
			return true
		}
	}
	return false
}

// poolOf is claim's NodePool, nil when it has none or it is gone.
func (l *Launcher) poolOf(ctx context.Context, claim *nsv1.NodeClaim) (*nsv1.NodePool, error) {
	name := claim.Labels[nsv1.LabelNodePool]
	if name == "" {
		return nil, nil
	}
	np := &nsv1.NodePool{}
	if err := l.kube.Get(ctx, types.NamespacedName{Name: name}, np); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return np, nil
}

// PoolTurn starts the launch turn of claim's pool when the pool limits a
// resource: every launch of such a pool happens within a turn, so each
// counts the ones before it. It returns the pool (nil: no resource limit,
// no turn) and the function ending the turn, to call once the launches are
// recorded (Launcher.Recorded).
func (l *Launcher) PoolTurn(ctx context.Context, claim *nsv1.NodeClaim) (*nsv1.NodePool, func(), error) {
	np, err := l.poolOf(ctx, claim)
	if err != nil || np == nil || !resourceLimited(np) {
		return nil, func() {}, err
	}
	return np, l.limits.lock(np.Name), nil
}

// Tight reports, within np's turn, whether np's limits could be passed if
// every claim of np not launched yet — those the cache lists and batch,
// claims about to launch — launched as its largest option. When not, the
// claims launch as they are, together; when so, one at a time, each
// trimmed to its pool's limits (Trim).
func (l *Launcher) Tight(ctx context.Context, np *nsv1.NodePool, batch []*nsv1.NodeClaim) (bool, error) {
	claims, its, err := l.poolState(ctx, np)
	if err != nil {
		return false, err
	}
	return provisioning.LimitTight(np, claims, batch, its, l.limits.seen(np.Name, claims)), nil
}

// Trim is the launch rule for claim within its pool np's turn: the claim to
// hand to Create (a copy trimmed to what np's launched capacity leaves), or
// why np's limits refuse it.
func (l *Launcher) Trim(ctx context.Context, np *nsv1.NodePool, claim *nsv1.NodeClaim) (*nsv1.NodeClaim, string, error) {
	claims, its, err := l.poolState(ctx, np)
	if err != nil {
		return nil, "", err
	}
	counted := provisioning.LaunchUsage(claim, claims, l.limits.seen(np.Name, claims))
	target, why := provisioning.TrimClaim(np, claim, its, counted)
	return target, why, nil
}

// Recorded notes a launch made within its pool's turn (claim's status just
// filled), so the turns after it count it while the cache lags.
func (l *Launcher) Recorded(claim *nsv1.NodeClaim) {
	l.limits.launched(claim)
}

// poolState lists np's claims and instance types.
func (l *Launcher) poolState(ctx context.Context, np *nsv1.NodePool) ([]*nsv1.NodeClaim, []*catalog.InstanceType, error) {
	list := &nsv1.NodeClaimList{}
	if err := l.kube.List(ctx, list, client.MatchingLabels{nsv1.LabelNodePool: np.Name}); err != nil {
		return nil, nil, fmt.Errorf("listing nodeclaims of nodepool %s: %w", np.Name, err)
	}
	its, err := l.cloud.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, nil, fmt.Errorf("instance types of nodepool %s: %w", np.Name, err)
	}
	claims := make([]*nsv1.NodeClaim, 0, len(list.Items))
	for i := range list.Items {
		claims = append(claims, &list.Items[i])
	}
	return claims, its, nil
}

// withinLimits is the launch rule for one claim: the claim to hand to
// Create (claim itself, or a copy trimmed to its pool's limits when they
// are tight), the function ending its pool's turn (call it once the launch
// is recorded), and why the limits refuse the launch ("" when they do not).
func (l *Launcher) withinLimits(ctx context.Context, claim *nsv1.NodeClaim) (*nsv1.NodeClaim, func(), string, error) {
	np, done, err := l.PoolTurn(ctx, claim)
	if err != nil || np == nil {
		return claim, done, "", err
	}
	tight, err := l.Tight(ctx, np, []*nsv1.NodeClaim{claim})
	if err != nil || !tight {
		if err != nil {
			done()
			return nil, func() {}, "", err
		}
		return claim, done, "", nil
	}
	target, why, err := l.Trim(ctx, np, claim)
	if err != nil {
		done()
		return nil, func() {}, "", err
	}
	return target, done, why, nil
}
