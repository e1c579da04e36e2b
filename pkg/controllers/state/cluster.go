package state

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// Cluster is the controller's view of the cluster.
type Cluster struct {
	c   client.Reader
	clk clock.Clock
	// shared, when set, lists the big kinds (pods, nodes, NodeClaims)
	// without copying them; see SharedLister.
	shared SharedLister
	// nominationTTL is how long a nomination holds a pod back from new
	// batches when its target is neither a launching claim nor ready (a
	// claim not in the cache yet, a node we do not manage); past it the
	// pod is planned again (the node may never come).
	nominationTTL time.Duration

	mu          sync.Mutex
	nominations map[types.UID]nomination
	launching   map[string]struct{}
	// launched is when this process launched each claim, for
	// LaunchedHold; pruned in Launched.
	launched   map[string]time.Time
	lastPruned time.Time
	// nominationsPruned is when PruneNominations last looked.
	nominationsPruned time.Time
	buffers           map[string][]*corev1.Pod
	bookings          map[string]booking
}

type nomination struct {
	target  string
	expires time.Time
}

// NewCluster reads through c (the manager's cached client).
func NewCluster(c client.Reader, clk clock.Clock, nominationTTL time.Duration) *Cluster {
	return &Cluster{c: c, clk: clk, nominationTTL: nominationTTL,
		nominations: map[types.UID]nomination{}, launching: map[string]struct{}{}, launched: map[string]time.Time{}}
}

// ListSharedFrom makes snapshots read pods, nodes and NodeClaims through l
// (the cache's own objects) instead of copying them into typed lists.
func (c *Cluster) ListSharedFrom(l SharedLister) *Cluster {
	c.shared = l
	return c
}

// Reader is the cached reader the view is built from.
func (c *Cluster) Reader() client.Reader { return c.c }

// Nominate records that pod is expected to run on target (a node or a claim).
func (c *Cluster) Nominate(pod types.UID, target string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nominations[pod] = nomination{target: target, expires: c.clk.Now().Add(c.nominationTTL)}
}

// Nominated returns the target pod was nominated to and when the
// nomination's TTL runs out, if the pod has one. An expired nomination is
// still returned: whether it holds depends on its target
// (provisioning.PendingPods: one onto a launching claim holds until the
// claim initializes or goes), and the cycle that judges it lapsed, or the
// pod's binding or deletion, forgets it.
func (c *Cluster) Nominated(pod types.UID) (string, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nominations[pod]
	if !ok {
		return "", time.Time{}, false
	}
	return n.target, n.expires, true
}

// PruneNominations drops the nominations of pods that are gone: pods is
// every pod the cache holds, and a nomination past its TTL whose pod is not
// among them belongs to a pod deleted while pending, which no pod event can
// forget (the event names only a pod that no longer exists). It looks at
// most once per nomination TTL, so a cycle over many pods rarely pays for
// it.
func (c *Cluster) PruneNominations(pods []*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	if now.Sub(c.nominationsPruned) < c.nominationTTL || len(c.nominations) == 0 {
		return
	}
	c.nominationsPruned = now
	present := make(map[types.UID]struct{}, len(pods))
	for _, p := range pods {
		present[p.UID] = struct{}{}
	}
	for uid, n := range c.nominations {
		if _, ok := present[uid]; !ok && !now.Before(n.expires) {
			delete(c.nominations, uid)
		}
	}
}

// ReleaseTarget drops every nomination onto target (its claim failed or was
// deleted) and returns the pods released, so they can be planned again now.
func (c *Cluster) ReleaseTarget(target string) []types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []types.UID
	for uid, n := range c.nominations {
		if n.target == target {
			delete(c.nominations, uid)
			out = append(out, uid)
		}
	}
	return out
}

// Forget drops pod's nomination (it was bound or deleted).
func (c *Cluster) Forget(pod types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nominations, pod)
}

// LaunchedHold is how long a claim this process launched is not launched
// again while the cache still shows it unlaunched: its Launched status is
// on its way. Past it, a claim still shown unlaunched (its status write
// failed) is launched again, and the provider adopts the instance the
// first launch started (by its claim tag) instead of starting another.
const LaunchedHold = 30 * time.Second

// StartLaunch marks claim as being launched by the caller; it returns false
// when someone else already is, or when this process launched it less than
// LaunchedHold ago.
func (c *Cluster) StartLaunch(claim string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.launching[claim]; ok {
		return false
	}
	if at, ok := c.launched[claim]; ok && c.clk.Since(at) < LaunchedHold {
		return false
	}
	c.launching[claim] = struct{}{}
	return true
}

// Launched records that claim was launched now (its status is being
// written), for StartLaunch.
func (c *Cluster) Launched(claim string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	c.launched[claim] = now
	if now.Sub(c.lastPruned) < LaunchedHold {
		return
	}
	c.lastPruned = now
	for name, at := range c.launched {
		if now.Sub(at) >= LaunchedHold {
			delete(c.launched, name)
		}
	}
}

// LaunchNotRecorded drops claim's Launched record: the status write that
// was to carry its launch failed, so the cache will not show it, and the
// next launch (which adopts the instance by its claim tag) need not wait
// out LaunchedHold.
func (c *Cluster) LaunchNotRecorded(claim string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.launched, claim)
}

// EndLaunch clears the mark set by StartLaunch.
func (c *Cluster) EndLaunch(claim string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.launching, claim)
}

// Snapshot is everything a provisioning or disruption decision reads; the
// type lives in the pure pkg/provisioning so the simulator builds the same
// value.
type Snapshot = provisioning.Snapshot

// Snapshot lists every object from the cache. The objects are the cache's
// own: callers must not mutate them (DeepCopy first).
func (c *Cluster) Snapshot(ctx context.Context) (*Snapshot, error) {
	var (
		pods   []*corev1.Pod
		nodes  []*corev1.Node
		claims []*nsv1.NodeClaim
		pools  nsv1.NodePoolList
		dss    appsv1.DaemonSetList
		pdbs   policyv1.PodDisruptionBudgetList
		pvcs   corev1.PersistentVolumeClaimList
		pvs    corev1.PersistentVolumeList
		scs    storagev1.StorageClassList
		cms    nsv1alpha1.CommitmentList
	)
	if c.shared != nil {
		var err error
		if pods, err = listShared[corev1.Pod](ctx, c.shared); err != nil {
			return nil, fmt.Errorf("listing pods for the cluster snapshot: %w", err)
		}
		if nodes, err = listShared[corev1.Node](ctx, c.shared); err != nil {
			return nil, fmt.Errorf("listing nodes for the cluster snapshot: %w", err)
		}
		if claims, err = listShared[nsv1.NodeClaim](ctx, c.shared); err != nil {
			return nil, fmt.Errorf("listing NodeClaims for the cluster snapshot: %w", err)
		}
	} else {
		var (
			pl corev1.PodList
			nl corev1.NodeList
			cl nsv1.NodeClaimList
		)
		for _, l := range []client.ObjectList{&pl, &nl, &cl} {
			if err := c.c.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
				return nil, fmt.Errorf("listing %T for the cluster snapshot: %w", l, err)
			}
		}
		pods, nodes, claims = ptrs(pl.Items), ptrs(nl.Items), ptrs(cl.Items)
	}
	// PVCs, PVs and StorageClasses: volume topology
	// (provisioning.VolumeRequirements).
	// Commitments: Savings Plans and RIs the solver charges on-demand to.
	for _, l := range []client.ObjectList{&pools, &dss, &pdbs, &pvcs, &pvs, &scs, &cms} {
		if err := c.c.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing %T for the cluster snapshot: %w", l, err)
		}
	}
	snap := provisioning.NewSnapshot(pods, nodes, claims, ptrs(pools.Items), ptrs(dss.Items), ptrs(pdbs.Items))
	snap.Storage = provisioning.NewStorage(ptrs(pvcs.Items), ptrs(pvs.Items), ptrs(scs.Items))
	// A commitment that does not parse is left out (the CRD's rules refuse
	// what CommitmentFrom would).
	snap.Commitments, _ = catalog.CommitmentsFrom(cms.Items)
	return snap, nil
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
