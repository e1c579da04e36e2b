package interruption

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// drainPoll is how often a deleted claim is looked at until its node has
// drained, for the drain latency.
const drainPoll = 2 * time.Second

// Disrupted watches the NodeClaims the queue marked Disrupting: it keeps
// their nodes tainted (a node may register after the notice), wakes the
// disruption executor once the cache shows a mark, and measures the
// notice-to-replacement and notice-to-drained latencies. It deletes
// nothing: the disruption executor (pkg/controllers/disruptor) carries the
// mark out as a command — launch replacements, delete the claim once they
// have initialized or when the deadline forces it (interruption.Decide).
type Disrupted struct {
	Deps

	mu sync.Mutex
	// seen remembers, per claim name, the latencies already observed.
	seen map[string]*observed
}

// observed is what was measured of one claim (uid): when its notice came,
// whether its replacements were planned and its node drained.
type observed struct {
	uid              types.UID
	noticed          time.Time
	planned, drained bool
}

// NewDisrupted builds the reconciler.
func NewDisrupted(deps Deps) *Disrupted {
	return &Disrupted{Deps: deps, seen: map[string]*observed{}}
}

// Controller declares it: the claims the handler marked.
func (d *Disrupted) Controller() operator.Controller {
	return operator.Controller{
		Name:         "interruption.disrupted",
		For:          &nsv1.NodeClaim{},
		ForPredicate: func(o client.Object) bool { return interruption.MarkOf(o.(*nsv1.NodeClaim)).Marked() },
		Reconciler:   d,
	}
}

// Reconcile looks at one marked claim.
func (d *Disrupted) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &nsv1.NodeClaim{}
	if err := d.Kube.Get(ctx, req.NamespacedName, claim); err != nil {
		if apierrors.IsNotFound(err) {
			d.gone(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !interruption.MarkOf(claim).Marked() {
		return reconcile.Result{}, nil
	}
	node, err := nodeOf(ctx, d.Kube, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	obs := d.observe(claim)
	// The node may have registered after the notice: keep new pods off it.
	if err := d.taint(ctx, node, obs.noticed); err != nil {
		return reconcile.Result{}, err
	}
	if claim.Annotations[nsv1.AnnotationDisruptionCommand] != "" || !claim.DeletionTimestamp.IsZero() {
		d.planned(obs)
	}
	if claim.DeletionTimestamp.IsZero() {
		// The queue woke the executor when it wrote the mark, maybe before
		// the executor's cache showed it; this reconcile runs once the
		// cache does, so wake it again (a held prespin command waits for
		// exactly this: the warning that follows).
		d.wake("interruption/" + claim.Name)
		return reconcile.Result{}, nil
	}
	if node != nil {
		pods, err := state.PodsOnNode(ctx, d.Kube, node.Name)
		if err != nil {
			return reconcile.Result{}, err
		}
		if len(interruption.Moved(pods)) > 0 {
			return reconcile.Result{RequeueAfter: drainPoll}, nil
		}
	}
	d.drained(claim.Name)
	return reconcile.Result{}, nil
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

// planned records the notice-to-planned latency (the executor started the
// claim's command) once; it reports whether this was the first time.
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
