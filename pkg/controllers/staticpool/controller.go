package staticpool

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// InstanceTypes is the cloud's view of what a pool's node class can launch
// (cloudprovider.CloudProvider satisfies it).
type InstanceTypes interface {
	GetInstanceTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error)
}

// retry is how soon a pool that could not launch (no instance types yet,
// no type fits) is looked at again.
const retry = 30 * time.Second

// Options tune the controller.
type Options struct {
	// NewName names a pool's next NodeClaim (default the pool's name and a
	// random suffix).
	NewName func(pool string) string
	// Solve tunes the solver StaticClaim runs.
	Solve scheduling.Options
}

// Controller keeps static NodePools at their replicas.
type Controller struct {
	kube     client.Client
	types    InstanceTypes
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
	opts     Options

	mu sync.Mutex
	// written are the claims this controller created or deleted lately, by
	// pool: the cache may not show them yet, and counting without them
	// would launch or delete twice. Forgotten once the cache agrees, or
	// after expectWrite.
	written map[string]map[string]write
}

type write struct {
	claim   *nsv1.NodeClaim
	deleted bool
	at      time.Time
}

// expectWrite bounds how long a write is assumed before the cache shows it.
const expectWrite = time.Minute

// New builds the controller.
func New(kube client.Client, its InstanceTypes, clk clock.Clock, rec *events.Recorder, m *metrics.Metrics, opts Options) *Controller {
	if opts.NewName == nil {
		opts.NewName = func(pool string) string { return pool + "-" + utilrand.String(5) }
	}
	return &Controller{kube: kube, types: its, clk: clk, recorder: rec, metrics: m, opts: opts, written: map[string]map[string]write{}}
}

// Controller declares the controller: NodePools, woken by their NodeClaims.
func (c *Controller) Controller() operator.Controller {
	return operator.Controller{
		Name: "nodepool.static",
		For:  &nsv1.NodePool{},
		Watches: []operator.Watch{
			{Object: &nsv1.NodeClaim{}, Map: func(_ context.Context, o client.Object) []reconcile.Request {
				if p := o.GetLabels()[nsv1.LabelNodePool]; p != "" {
					return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p}}}
				}
				return nil
			}},
		},
		Reconciler: c,
	}
}

// Reconcile brings a static pool to its replicas; dynamic pools are left
// alone.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool := &nsv1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !pool.IsStatic() || !pool.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var list nsv1.NodeClaimList
	if err := c.kube.List(ctx, &list, client.MatchingLabels{nsv1.LabelNodePool: pool.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of static nodepool %s: %w", pool.Name, err)
	}
	in := provisioning.StaticInput{Pool: pool, PodsByNode: map[string][]*corev1.Pod{}}
	for i := range list.Items {
		in.Claims = append(in.Claims, &list.Items[i])
	}
	in.Claims = c.withWrites(pool.Name, in.Claims)
	d := provisioning.StaticPlan(in)
	if len(d.Delete) > 0 {
		// The pods decide which nodes go least disruptively: read them
		// only when a scale-down needs them.
		for _, cl := range in.Claims {
			if cl.Status.NodeName == "" {
				continue
			}
			var pods corev1.PodList
			if err := c.kube.List(ctx, &pods, client.MatchingFields{state.PodNodeNameIndex: cl.Status.NodeName}); err != nil {
				return reconcile.Result{}, fmt.Errorf("listing the pods of node %s: %w", cl.Status.NodeName, err)
			}
			for i := range pods.Items {
				in.PodsByNode[cl.Status.NodeName] = append(in.PodsByNode[cl.Status.NodeName], &pods.Items[i])
			}
		}
		d = provisioning.StaticPlan(in)
	}
	var res reconcile.Result
	if d.NodeLimit != "" {
		c.recorder.Publish(events.StaticNodeLimitExceeded(pool, d.NodeLimit))
	}
	if d.Launch > 0 {
		launched, err := c.launch(ctx, pool, d.Launch)
		if err != nil {
			c.recorder.Publish(events.StaticLaunchFailed(pool, err.Error()))
			d.Condition = lifecycle.Condition(nsv1.ConditionReplicasSatisfied, false, "LaunchFailed", err.Error())
			res.RequeueAfter = retry
		} else {
			c.recorder.Publish(events.StaticScaled(pool, fmt.Sprintf("%d of %d nodes; launched %s", d.Counted, *pool.Spec.Replicas, launched)))
		}
	}
	for _, cl := range d.Delete {
		if err := c.kube.Delete(ctx, cl); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s of static nodepool %s: %w", cl.Name, pool.Name, err)
		}
		c.remember(pool.Name, cl, true)
		c.recorder.Publish(events.StaticScaled(pool, fmt.Sprintf("%d nodes for %d replicas; removing nodeclaim %s (node %q), the least disruptive",
			d.Counted, *pool.Spec.Replicas, cl.Name, cl.Status.NodeName)))
	}
	if err := c.setCondition(ctx, pool, d.Condition); err != nil {
		return reconcile.Result{}, err
	}
	return res, nil
}

// launch creates n NodeClaims from the pool's StaticClaim.
func (c *Controller) launch(ctx context.Context, pool *nsv1.NodePool, n int) (string, error) {
	its, err := c.types.GetInstanceTypes(ctx, pool)
	if err != nil {
		return "", fmt.Errorf("reading the instance types of static nodepool %s: %w", pool.Name, err)
	}
	var dss appsv1.DaemonSetList
	if err := c.kube.List(ctx, &dss); err != nil {
		return "", fmt.Errorf("listing daemonsets: %w", err)
	}
	ds := make([]*appsv1.DaemonSet, len(dss.Items))
	for i := range dss.Items {
		ds[i] = &dss.Items[i]
	}
	cp, err := provisioning.StaticClaim(pool, its, ds, c.opts.Solve)
	if err != nil {
		return "", err
	}
	names := ""
	for range n {
		claim := provisioning.NewNodeClaim(pool, cp, c.opts.NewName(pool.Name))
		if err := c.kube.Create(ctx, claim); err != nil {
			return "", fmt.Errorf("creating nodeclaim %s of static nodepool %s: %w", claim.Name, pool.Name, err)
		}
		c.remember(pool.Name, claim, false)
		c.metrics.NodeClaimsCreated.WithLabelValues(pool.Name, "static").Inc()
		if names != "" {
			names += ", "
		}
		names += claim.Name
	}
	return fmt.Sprintf("%s (%d launch options from $%.4f/h)", names, len(cp.Options), cp.Price()), nil
}

// setCondition writes ReplicasSatisfied alone (statuspatch merges it with
// the nodepool status controller's conditions).
func (c *Controller) setCondition(ctx context.Context, pool *nsv1.NodePool, cond metav1.Condition) error {
	base := pool.DeepCopy()
	lifecycle.SetCondition(&pool.Status.Conditions, cond, pool.Generation, metav1.NewTime(c.clk.Now()))
	if equality.Semantic.DeepEqual(base.Status, pool.Status) {
		return nil
	}
	if err := statuspatch.Patch(ctx, c.kube, base, pool); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching static nodepool %s status: %w", pool.Name, err))
	}
	return nil
}

func (c *Controller) remember(pool string, claim *nsv1.NodeClaim, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written[pool] == nil {
		c.written[pool] = map[string]write{}
	}
	c.written[pool][claim.Name] = write{claim: claim, deleted: deleted, at: c.clk.Now()}
}

// withWrites is claims as this controller's own recent writes left them:
// a claim it created and the cache does not list yet is added, one it
// deleted and the cache still lists alive is shown being deleted.
func (c *Controller) withWrites(pool string, claims []*nsv1.NodeClaim) []*nsv1.NodeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := c.written[pool]
	if len(ws) == 0 {
		return claims
	}
	now := c.clk.Now()
	seen := map[string]*nsv1.NodeClaim{}
	for _, cl := range claims {
		seen[cl.Name] = cl
	}
	out := make([]*nsv1.NodeClaim, 0, len(claims)+len(ws))
	for _, cl := range claims {
		if w, ok := ws[cl.Name]; ok && w.deleted && cl.DeletionTimestamp.IsZero() && now.Sub(w.at) < expectWrite {
			cp := cl.DeepCopy()
			cp.DeletionTimestamp = &metav1.Time{Time: w.at}
			cl = cp
		}
		out = append(out, cl)
	}
	for name, w := range ws {
		cl, listed := seen[name]
		switch {
		case now.Sub(w.at) >= expectWrite,
			!w.deleted && listed,
			w.deleted && (!listed || !cl.DeletionTimestamp.IsZero()):
			delete(ws, name) // the cache agrees, or it is too old to matter
		case !w.deleted:
			out = append(out, w.claim)
		}
	}
	return out
}
