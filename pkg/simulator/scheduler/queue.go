package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/utils/clock"
)

// kube-scheduler's queue timings (defaults of podInitialBackoffSeconds and
// podMaxBackoffSeconds, the 5-minute cap on staying unschedulable, the
// 30-second period of the leftover flush, and the 1-second backoff window
// of SchedulerPopFromBackoffQ).
const (
	initialBackoff          = time.Second
	maxBackoff              = 10 * time.Second
	maxInUnschedulable      = 5 * time.Minute
	unschedulableFlushEvery = 30 * time.Second
	backoffWindow           = time.Second
)

type qstate uint8

const (
	inActive qstate = iota
	inBackoff
	inUnschedulable
	inGated
	inFlight
	inErrorBackoff
)

// queued is a pod in the queue (framework.QueuedPodInfo).
type queued struct {
	pod   *corev1.Pod
	key   string
	state qstate
	// timestamp is when the pod was added, or last failed; with seq (the
	// order timestamps were set in) it orders pods of equal priority.
	timestamp time.Time
	seq       uint64
	failures  int
	// errors counts consecutive attempts that ended in an error rather than
	// a fit failure (kube-scheduler's ConsecutiveErrorsCount): while it is
	// not zero it, not failures, sets the backoff.
	errors int
	expiry time.Time // end of backoff, aligned to the 1s window
	index  int       // position in its heap
	// eventInFlight: a cluster event arrived while the pod was being
	// scheduled, so a failure goes back to the queue rather than waiting.
	eventInFlight bool
}

// Queue is kube-scheduler's scheduling queue (PriorityQueue) with the v1.37
// defaults on a clock:
//   - activeQ ordered by PrioritySort: priority high first, then the time
//     the pod was added or last failed (ties in insertion order);
//   - a failed pod waits in unschedulablePods until a cluster event
//     (MoveAll) or the leftover flush moves it, or goes straight back if an
//     event arrived while it was in flight;
//   - a moved pod whose backoff (1s doubling to 10s per failure, ending at
//     a whole second) has not expired goes to backoffQ, otherwise to
//     activeQ; with SchedulerPopFromBackoffQ (on by default) Pop takes from
//     backoffQ whenever activeQ is empty, so backoff only delays a pod
//     while others are waiting;
//   - an attempt that ends in an error rather than a fit failure — "no
//     nodes available to schedule pods" when the cluster has no node at
//     all — backs off by the count of consecutive errors in a separate
//     error backoffQ that neither Pop nor cluster events shorten: the pod
//     is tried again only when its backoff ends;
//   - every 30 seconds pods unschedulable for more than 5 minutes are moved;
//   - pods with scheduling gates wait until an update removes the gates.
//
// Queueing hints are not modelled: MoveAll moves every unschedulable pod,
// where kube-scheduler asks each rejecting plugin whether the event could
// help. It is not safe for concurrent use.
type Queue struct {
	clk           clock.Clock
	start         time.Time
	seq           uint64
	items         map[string]*queued
	active        itemHeap
	backoff       itemHeap
	unschedulable itemHeap // by timestamp: the order the leftover flush frees them
	errorBackoff  itemHeap // by expiry: pods whose last attempt was an error
	inFlight      map[string]*queued
}

// NewQueue returns an empty queue; the leftover flush ticks every 30s from
// now.
func NewQueue(clk clock.Clock) *Queue {
	return &Queue{
		clk:           clk,
		start:         clk.Now(),
		items:         map[string]*queued{},
		active:        itemHeap{less: activeLess},
		backoff:       itemHeap{less: backoffLess},
		unschedulable: itemHeap{less: stampLess},
		errorBackoff:  itemHeap{less: backoffLess},
		inFlight:      map[string]*queued{},
	}
}

func activeLess(a, b *queued) bool {
	pa, pb := corev1helpers.PodPriority(a.pod), corev1helpers.PodPriority(b.pod)
	if pa != pb {
		return pa > pb
	}
	if !a.timestamp.Equal(b.timestamp) {
		return a.timestamp.Before(b.timestamp)
	}
	return a.seq < b.seq
}

func stampLess(a, b *queued) bool {
	if !a.timestamp.Equal(b.timestamp) {
		return a.timestamp.Before(b.timestamp)
	}
	return a.seq < b.seq
}

func backoffLess(a, b *queued) bool {
	if !a.expiry.Equal(b.expiry) {
		return a.expiry.Before(b.expiry)
	}
	return activeLess(a, b)
}

// Add adds a new pending pod or updates a queued one. A pod with
// spec.nodeName set is bound and leaves the queue.
func (q *Queue) Add(p *corev1.Pod) {
	if p.Spec.NodeName != "" {
		q.Delete(p)
		return
	}
	key := podKey(p)
	it, ok := q.items[key]
	if !ok {
		it = &queued{pod: p, key: key}
		q.stamp(it)
		q.items[key] = it
		if len(p.Spec.SchedulingGates) > 0 {
			it.state = inGated
			return
		}
		q.toActive(it)
		return
	}
	old := it.pod
	it.pod = p
	switch it.state {
	case inFlight:
		// The pod's own update is an event too, unless only its status
		// changed (as when a failure is written back to it).
		it.eventInFlight = it.eventInFlight || podUpdated(old, p)
	case inGated:
		if len(p.Spec.SchedulingGates) == 0 {
			q.toActive(it)
		}
	case inActive:
		q.active.fix(it)
	case inBackoff:
		q.backoff.fix(it)
	case inUnschedulable:
		if podUpdated(old, p) {
			q.unschedulable.remove(it)
			q.requeue(it, q.clk.Now())
		}
	}
}

// Delete removes a pod from the queue, wherever it is.
func (q *Queue) Delete(p *corev1.Pod) {
	key := podKey(p)
	it, ok := q.items[key]
	if !ok {
		return
	}
	delete(q.items, key)
	switch it.state {
	case inActive:
		q.active.remove(it)
	case inBackoff:
		q.backoff.remove(it)
	case inUnschedulable:
		q.unschedulable.remove(it)
	case inErrorBackoff:
		q.errorBackoff.remove(it)
	case inFlight:
		delete(q.inFlight, key)
	}
}

// Pop returns the next pod to try now: the head of activeQ, else of
// backoffQ. The pod is in flight until Failed or Delete (after binding).
func (q *Queue) Pop() (*corev1.Pod, bool) {
	q.flush(q.clk.Now())
	var it *queued
	switch {
	case q.active.Len() > 0:
		it = q.active.pop()
	case q.backoff.Len() > 0:
		it = q.backoff.pop()
	default:
		return nil, false
	}
	it.state = inFlight
	it.eventInFlight = false
	q.inFlight[it.key] = it
	return it.pod, true
}

// Failed records that the pod's scheduling attempt found no node: its
// backoff grows, and it waits for a cluster event unless one arrived while
// it was in flight. A pod that is not in flight is left alone.
func (q *Queue) Failed(p *corev1.Pod) {
	it, ok := q.items[podKey(p)]
	if !ok || it.state != inFlight {
		return
	}
	now := q.clk.Now()
	delete(q.inFlight, it.key)
	it.pod = p
	it.failures++
	it.errors = 0
	q.stamp(it)
	it.expiry = it.timestamp.Add(backoffDuration(it.failures)).Truncate(backoffWindow)
	if it.eventInFlight {
		q.requeue(it, now)
		return
	}
	it.state = inUnschedulable
	q.unschedulable.push(it)
}

// Errored records that the pod's scheduling attempt ended in an error (the
// cluster had no node at all): it backs off by its count of consecutive
// errors, and only time ends that backoff. A pod that is not in flight is
// left alone.
func (q *Queue) Errored(p *corev1.Pod) {
	it, ok := q.items[podKey(p)]
	if !ok || it.state != inFlight {
		return
	}
	delete(q.inFlight, it.key)
	it.pod = p
	it.errors++
	q.stamp(it)
	it.expiry = it.timestamp.Add(backoffDuration(it.errors)).Truncate(backoffWindow)
	it.state = inErrorBackoff
	q.errorBackoff.push(it)
}

// MoveAll is a cluster event that may make pods schedulable (a node added
// or changed, a pod deleted): every unschedulable pod moves to backoffQ or
// activeQ, and pods in flight will be requeued if they fail.
func (q *Queue) MoveAll() {
	now := q.clk.Now()
	for q.unschedulable.Len() > 0 {
		q.requeue(q.unschedulable.pop(), now)
	}
	for _, it := range q.inFlight {
		it.eventInFlight = true
	}
}

// NextTime is when Pop will next return a pod if nothing else happens: now
// if a pod is in activeQ or backoffQ, else the flush tick that moves the
// first long-unschedulable pod. It returns false when no pod is waiting for
// time alone (gated and in-flight pods are not).
func (q *Queue) NextTime() (time.Time, bool) {
	now := q.clk.Now()
	q.flush(now)
	if q.active.Len() > 0 || q.backoff.Len() > 0 {
		return now, true
	}
	var next time.Time
	if q.unschedulable.Len() > 0 {
		next = q.flushTime(q.unschedulable.peek())
	}
	if q.errorBackoff.Len() > 0 {
		// Ready in the first window after its expiry.
		at := q.errorBackoff.peek().expiry.Add(backoffWindow)
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, !next.IsZero()
}

// Len is the number of pods the queue holds, in flight included.
func (q *Queue) Len() int { return len(q.items) }

func (q *Queue) stamp(it *queued) {
	it.timestamp = q.clk.Now()
	q.seq++
	it.seq = q.seq
}

func (q *Queue) toActive(it *queued) {
	it.state = inActive
	q.active.push(it)
}

// requeue puts a pod moved by an event into backoffQ if its backoff has not
// ended by the current 1s window, else into activeQ.
func (q *Queue) requeue(it *queued, now time.Time) {
	if it.failures > 0 && !it.expiry.Before(now.Truncate(backoffWindow)) {
		it.state = inBackoff
		q.backoff.push(it)
		return
	}
	q.toActive(it)
}

// flush does what kube-scheduler's periodic goroutines would have done by
// now: move pods whose backoff ended to activeQ (every second) and pods
// unschedulable for over 5 minutes out of unschedulablePods (every 30s).
func (q *Queue) flush(now time.Time) {
	for q.unschedulable.Len() > 0 && !q.flushTime(q.unschedulable.peek()).After(now) {
		q.requeue(q.unschedulable.pop(), now)
	}
	for _, h := range []*itemHeap{&q.backoff, &q.errorBackoff} {
		for h.Len() > 0 {
			it := h.peek()
			if !it.expiry.Before(now.Truncate(backoffWindow)) {
				break
			}
			h.pop()
			q.toActive(it)
		}
	}
}

// flushTime is the first 30s tick after the pod has been unschedulable for
// more than 5 minutes.
func (q *Queue) flushTime(it *queued) time.Time {
	due := it.timestamp.Add(maxInUnschedulable).Sub(q.start)
	ticks := due/unschedulableFlushEvery + 1
	return q.start.Add(ticks * unschedulableFlushEvery)
}

// backoffDuration is 1s doubled per earlier failure, capped at 10s.
func backoffDuration(failures int) time.Duration {
	d := initialBackoff
	for i := 1; i < failures; i++ {
		if d > maxBackoff-d {
			return maxBackoff
		}
		d += d
	}
	return d
}

// podUpdated reports an update that may change the pod's scheduling
// (anything but status and bookkeeping metadata).
func podUpdated(old, cur *corev1.Pod) bool {
	return !equality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
		!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations)
}
