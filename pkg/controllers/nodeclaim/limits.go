package nodeclaim

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
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

// launchLimits serialises the launches of each limited pool and remembers
// what they launched until the cache shows it.
type launchLimits struct {
	clk   clock.Clock
	mu    sync.Mutex
	pools map[string]*sync.Mutex
	// recent: by pool and claim, the capacity launched and when.
	recent map[string]map[string]launchedCap
}

type launchedCap struct {
	capacity corev1.ResourceList
	at       time.Time
}

func newLaunchLimits(clk clock.Clock) *launchLimits {
	return &launchLimits{clk: clk, pools: map[string]*sync.Mutex{}, recent: map[string]map[string]launchedCap{}}
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
	if ll.recent[pool] == nil {
		ll.recent[pool] = map[string]launchedCap{}
	}
	ll.recent[pool][claim.Name] = launchedCap{capacity: claim.Status.Capacity.DeepCopy(), at: ll.clk.Now()}
}

// seen is what the pool's recent launches add to listed: entries the cache
// has caught up with (the claim shows its capacity) or that expired are
// forgotten.
func (ll *launchLimits) seen(pool string, listed []*nsv1.NodeClaim) map[string]corev1.ResourceList {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	m := ll.recent[pool]
	for _, c := range listed {
		if len(c.Status.Capacity) > 0 {
			delete(m, c.Name)
		}
	}
	out := map[string]corev1.ResourceList{}
	now := ll.clk.Now()
	for name, e := range m {
		if now.Sub(e.at) >= launchedTTL {
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

// withinLimits is the launch rule for claim: the claim to hand to Create
// (claim itself, or a copy trimmed to its pool's limits), a function to
// call once the launch is recorded (it ends the pool's turn), and why the
// limits refuse the launch ("" when they do not).
func (l *Launcher) withinLimits(ctx context.Context, claim *nsv1.NodeClaim) (*nsv1.NodeClaim, func(), string, error) {
	noop := func() {}
	np, err := l.poolOf(ctx, claim)
	if err != nil {
		return nil, noop, "", err
	}
	if np == nil || !resourceLimited(np) {
		return claim, noop, "", nil
	}
	done := l.limits.lock(np.Name)
	list := &nsv1.NodeClaimList{}
	if err := l.kube.List(ctx, list, client.MatchingLabels{nsv1.LabelNodePool: np.Name}); err != nil {
		done()
		return nil, noop, "", err
	}
	its, err := l.cloud.GetInstanceTypes(ctx, np)
	if err != nil {
		done()
		return nil, noop, "", err
	}
	claims := make([]*nsv1.NodeClaim, 0, len(list.Items))
	for i := range list.Items {
		claims = append(claims, &list.Items[i])
	}
	counted := provisioning.LaunchUsage(claim, claims, l.limits.seen(np.Name, claims))
	target, why := provisioning.TrimClaim(np, claim, its, counted)
	return target, done, why, nil
}
