package operator

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Controller is an event-driven reconciler, declared so any driver can run
// it: the manager (Register) or the simulator.
type Controller struct {
	// Name is unique among the operator's controllers.
	Name string
	// For is the kind reconciled; its events enqueue the object's own key.
	For client.Object
	// ForPredicate, when set, filters For's events (applied to the new
	// object of an update, and to the object of a create or delete).
	ForPredicate func(client.Object) bool
	// Watches are other kinds whose events enqueue requests.
	Watches []Watch
	// Workers bounds parallel reconciles in the manager (default 1). The
	// simulator runs one reconcile at a time.
	Workers    int
	Reconciler reconcile.Reconciler
}

// Watch maps events of another kind to requests of the controller.
type Watch struct {
	Object client.Object
	// Predicate, when set, filters events as ForPredicate does.
	Predicate func(client.Object) bool
	// Map turns an event's object into requests.
	Map handler.MapFunc
}

// Singleton is a loop with no object of its own: garbage collection, the
// provisioner's batching cycle, the interruption queue, disruption. Each
// Reconcile runs one step; RequeueAfter says when the next is due (zero:
// only when woken), an error retries with backoff.
type Singleton interface {
	Name() string
	Reconcile(ctx context.Context) (reconcile.Result, error)
}

// Wakeable singletons can be asked to run before their RequeueAfter, e.g.
// the provisioner when a pod arrives. The driver gives them the function to
// call; calling it from any goroutine is safe.
type Wakeable interface {
	SetWake(wake func())
}

// Register adds c to the manager.
func Register(mgr ctrl.Manager, c Controller) error {
	b := ctrl.NewControllerManagedBy(mgr).Named(c.Name)
	if c.ForPredicate != nil {
		b = b.For(c.For, builder.WithPredicates(predicate.NewPredicateFuncs(c.ForPredicate)))
	} else {
		b = b.For(c.For)
	}
	for _, w := range c.Watches {
		var opts []builder.WatchesOption
		if w.Predicate != nil {
			opts = append(opts, builder.WithPredicates(predicate.NewPredicateFuncs(w.Predicate)))
		}
		b = b.Watches(w.Object, handler.EnqueueRequestsFromMapFunc(w.Map), opts...)
	}
	workers := c.Workers
	if workers <= 0 {
		workers = 1
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: workers}).Complete(quietConflicts{c.Reconciler})
}

// OnlyConflicts reports whether err is an optimistic-lock conflict (every
// error of a joined one is): another writer changed the object since it was
// read, and the retry reads it again. Routine under concurrent controllers,
// so it is retried quietly rather than logged as an error.
func OnlyConflicts(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		for _, e := range errs {
			if e != nil && !OnlyConflicts(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return apierrors.IsConflict(err)
}

// ConflictRetry is how soon a reconcile that failed only on conflicts runs
// again: the next read sees the other writer's change.
const ConflictRetry = 200 * time.Millisecond

// quietConflicts retries a reconcile that failed only on conflicts after
// ConflictRetry and logs it at debug level, instead of as a "Reconciler
// error"; a reconcile cut short by the manager's stop is not an error.
type quietConflicts struct{ r reconcile.Reconciler }

func (q quietConflicts) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := q.r.Reconcile(ctx, req)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Shutting down: the manager's stop cut the reconcile short.
		return reconcile.Result{}, nil
	}
	if OnlyConflicts(err) {
		log.FromContext(ctx).V(1).Info("conflict; retrying", "error", err.Error(), "after", ConflictRetry)
		return reconcile.Result{RequeueAfter: ConflictRetry}, nil
	}
	return res, err
}

// AddSingleton runs s under the manager, on the leader only.
func AddSingleton(mgr ctrl.Manager, clk clock.Clock, s Singleton) error {
	return mgr.Add(&singletonRunner{s: s, clk: clk, wake: make(chan struct{}, 1)})
}

type singletonRunner struct {
	s    Singleton
	clk  clock.Clock
	wake chan struct{}
}

var _ manager.LeaderElectionRunnable = (*singletonRunner)(nil)

func (r *singletonRunner) NeedLeaderElection() bool { return true }

// Backoff bounds for a failing singleton step.
const (
	singletonBackoffBase = 100 * time.Millisecond
	singletonBackoffMax  = time.Minute
)

func (r *singletonRunner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("singleton", r.s.Name())
	if w, ok := r.s.(Wakeable); ok {
		w.SetWake(func() {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		})
	}
	failures := 0
	for {
		res, err := r.s.Reconcile(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := res.RequeueAfter
		if err != nil {
			if OnlyConflicts(err) {
				logger.V(1).Info("step conflicted; retrying", "error", err.Error())
			} else {
				logger.Error(err, "step failed")
			}
			wait = Backoff(failures, singletonBackoffBase, singletonBackoffMax)
			failures++
		} else {
			failures = 0
		}
		var (
			t     clock.Timer
			timer <-chan time.Time
		)
		if wait > 0 {
			t = r.clk.NewTimer(wait)
			timer = t.C()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// Backoff is the delay after failures consecutive failures: base doubled per
// failure, capped at max (the shape of controller-runtime's per-item rate
// limiter, which the simulator's queue follows too).
func Backoff(failures int, base, max time.Duration) time.Duration {
	d := base
	for i := 0; i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
