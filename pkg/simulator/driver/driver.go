// Package driver runs Nodesmith's controllers in the simulator: it plays
// the part of controller-runtime's manager — watches turned into work
// queues, reconciles, RequeueAfter, error backoff, singleton loops — on a
// virtual clock, one reconcile at a time, in a fixed order, so a run is
// repeatable.
//
// The controllers are the operator declarations the controller binary
// registers with its manager (pkg/operator, built by pkg/controllers.New):
// the same kinds, the same watch mappings and predicates, the same
// Reconcile methods. Events come from the simulated API server's change
// feed (pkg/simulator/apiserver) instead of informers. What differs is only
// the schedule: here a reconcile takes no virtual time and the queues are
// drained in declaration order.
//
// It decides nothing itself and must not import pkg/scheduling or the AWS
// SDK.
package driver

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
)

// Backoff of a failing reconcile: controller-runtime's default per-item
// exponential limiter.
const (
	backoffBase = 5 * time.Millisecond
	backoffMax  = 1000 * time.Second
)

// DefaultMaxSteps bounds the reconciles of one Settle: controllers that
// keep waking each other at one instant are a bug to report, not a hang.
const DefaultMaxSteps = 200000

// Driver runs the controllers. Build it with New.
type Driver struct {
	ctx    context.Context
	clk    clock.Clock
	client client.Client

	ctrls   []*ctrlState
	singles []*singleState
	timers  timerHeap
	seq     uint64

	// MaxSteps bounds one Settle (default DefaultMaxSteps).
	MaxSteps int
	// OnError, when set, hears every reconcile error (the controller's log).
	OnError func(controller string, req reconcile.Request, err error)
	// Reconciles counts reconciles per controller or singleton name.
	Reconciles map[string]int
}

type ctrlState struct {
	c        operator.Controller
	forGVK   schema.GroupVersionKind
	watches  []schema.GroupVersionKind
	queue    []reconcile.Request
	queued   map[reconcile.Request]bool
	failures map[reconcile.Request]int
}

type singleState struct {
	s        operator.Singleton
	woken    bool
	failures int
}

// New builds a driver over the store; the singletons run once at start, as
// a manager starts its runnables.
func New(ctx context.Context, clk clock.Clock, store *apiserver.Server, ctrls []operator.Controller, singles []operator.Singleton) (*Driver, error) {
	d := &Driver{ctx: ctx, clk: clk, client: store.Client(), MaxSteps: DefaultMaxSteps, Reconciles: map[string]int{}}
	for _, c := range ctrls {
		cs := &ctrlState{c: c, queued: map[reconcile.Request]bool{}, failures: map[reconcile.Request]int{}}
		var err error
		if cs.forGVK, err = d.client.GroupVersionKindFor(c.For); err != nil {
			return nil, fmt.Errorf("controller %s: %w", c.Name, err)
		}
		for _, w := range c.Watches {
			gvk, err := d.client.GroupVersionKindFor(w.Object)
			if err != nil {
				return nil, fmt.Errorf("controller %s: %w", c.Name, err)
			}
			cs.watches = append(cs.watches, gvk)
		}
		d.ctrls = append(d.ctrls, cs)
	}
	for _, s := range singles {
		ss := &singleState{s: s, woken: true}
		if w, ok := s.(operator.Wakeable); ok {
			w.SetWake(func() { ss.woken = true })
		}
		d.singles = append(d.singles, ss)
	}
	store.Watch(d.onChange)
	return d, nil
}

// onChange turns a committed write into requests, as the manager's event
// handlers do: the object's own key for controllers of its kind, the
// mapped requests (of the old and the new object) for watches.
func (d *Driver) onChange(ch apiserver.Change) {
	obj := ch.Object()
	gvk, err := d.client.GroupVersionKindFor(obj)
	if err != nil {
		return
	}
	pass := func(pred func(client.Object) bool) bool {
		return pred == nil || pred(obj) // create and update: the new object; delete: the last one
	}
	for _, cs := range d.ctrls {
		if cs.forGVK == gvk && pass(cs.c.ForPredicate) {
			cs.enqueue(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		for i, w := range cs.c.Watches {
			if cs.watches[i] != gvk || !pass(w.Predicate) {
				continue
			}
			for _, r := range w.Map(d.ctx, obj) {
				cs.enqueue(r)
			}
			if ch.Old != nil && ch.New != nil {
				for _, r := range w.Map(d.ctx, ch.Old) {
					cs.enqueue(r)
				}
			}
		}
	}
}

func (cs *ctrlState) enqueue(r reconcile.Request) {
	if cs.queued[r] {
		return
	}
	cs.queued[r] = true
	cs.queue = append(cs.queue, r)
}

// Settle runs every reconcile due now until none is left.
func (d *Driver) Settle() error {
	for steps := 0; ; steps++ {
		if steps >= d.MaxSteps {
			return fmt.Errorf("the controllers did not settle after %d reconciles at %s (queues: %s)", steps, d.clk.Now().UTC().Format(time.RFC3339), d.queues())
		}
		d.fireTimers()
		if err := d.ctx.Err(); err != nil {
			return err
		}
		if d.runOne() {
			continue
		}
		return nil
	}
}

// runOne runs the first queued request of the first controller with work,
// or else the first due singleton; false when nothing is due.
func (d *Driver) runOne() bool {
	for _, cs := range d.ctrls {
		if len(cs.queue) == 0 {
			continue
		}
		r := cs.queue[0]
		cs.queue = cs.queue[1:]
		delete(cs.queued, r)
		d.Reconciles[cs.c.Name]++
		res, err := cs.c.Reconciler.Reconcile(d.ctx, r)
		n := cs.failures[r]
		d.handle(cs.c.Name, r, &n, res, err, func(at time.Time) { d.after(at, timer{ctrl: cs, req: r}) })
		if n == 0 {
			delete(cs.failures, r)
		} else {
			cs.failures[r] = n
		}
		return true
	}
	for _, ss := range d.singles {
		if !ss.woken {
			continue
		}
		ss.woken = false
		d.Reconciles[ss.s.Name()]++
		res, err := ss.s.Reconcile(d.ctx)
		d.handle(ss.s.Name(), reconcile.Request{}, &ss.failures, res, err, func(at time.Time) { d.after(at, timer{single: ss}) })
		return true
	}
	return false
}

// handle applies a reconcile's result: an error backs off (a terminal one
// is dropped), RequeueAfter waits, success forgets the failures.
func (d *Driver) handle(name string, r reconcile.Request, failures *int, res reconcile.Result, err error, requeue func(time.Time)) {
	now := d.clk.Now()
	if err != nil {
		if d.OnError != nil {
			d.OnError(name, r, err)
		}
		if errors.Is(err, reconcile.TerminalError(nil)) {
			*failures = 0
			return
		}
		requeue(now.Add(operator.Backoff(*failures, backoffBase, backoffMax)))
		*failures++
		return
	}
	*failures = 0
	if res.RequeueAfter > 0 {
		requeue(now.Add(res.RequeueAfter))
	} else if res.Requeue { //nolint:staticcheck // honoured for controllers that still set it
		requeue(now)
	}
}

// Wake makes the named singleton due now, as a long poll returns when
// its message arrives; it reports whether such a singleton runs.
func (d *Driver) Wake(name string) bool {
	for _, ss := range d.singles {
		if ss.s.Name() == name {
			ss.woken = true
			return true
		}
	}
	return false
}

// NextTimer is the earliest pending requeue, if any.
func (d *Driver) NextTimer() (time.Time, bool) {
	if len(d.timers) == 0 {
		return time.Time{}, false
	}
	return d.timers[0].at, true
}

func (d *Driver) after(at time.Time, t timer) {
	d.seq++
	t.at, t.seq = at, d.seq
	heap.Push(&d.timers, t)
}

func (d *Driver) fireTimers() {
	now := d.clk.Now()
	for len(d.timers) > 0 && !d.timers[0].at.After(now) {
		t := heap.Pop(&d.timers).(timer)
		if t.single != nil {
			t.single.woken = true
		} else {
			t.ctrl.enqueue(t.req)
		}
	}
}

func (d *Driver) queues() string {
	out := ""
	for _, cs := range d.ctrls {
		if len(cs.queue) > 0 {
			out += fmt.Sprintf("%s=%d ", cs.c.Name, len(cs.queue))
		}
	}
	return out
}

type timer struct {
	at     time.Time
	seq    uint64
	ctrl   *ctrlState
	req    reconcile.Request
	single *singleState
}

type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
