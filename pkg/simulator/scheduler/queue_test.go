package scheduler

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func popName(q *Queue) string {
	p, ok := q.Pop()
	if !ok {
		return ""
	}
	return p.Name
}

// PrioritySort: higher priority first, then earlier timestamp, then the
// order pods were added.
func TestQueueOrder(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := NewQueue(clk)
	q.Add(mkPod("early"))
	clk.Step(time.Second)
	q.Add(mkPod("low1"))
	q.Add(mkPod("high", priority(1000)))
	q.Add(mkPod("low2"))
	q.Add(mkPod("negative", priority(-5)))
	for _, want := range []string{"high", "early", "low1", "low2", "negative", ""} {
		if got := popName(q); got != want {
			t.Fatalf("popped %q, want %q", got, want)
		}
	}
}

// kube-scheduler's backoff: 1s doubled per failure up to 10s.
func TestBackoffDuration(t *testing.T) {
	for i, want := range []time.Duration{1, 2, 4, 8, 10, 10, 10} {
		if got := backoffDuration(i + 1); got != want*time.Second {
			t.Errorf("failure %d: %v, want %v", i+1, got, want*time.Second)
		}
	}
}

// A failed pod waits in unschedulablePods for an event; once moved it sits
// in backoffQ while other pods are waiting, until its backoff ends at the
// end of the 1s window its expiry falls in (SchedulerPopFromBackoffQ).
func TestQueueBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := NewQueue(clk)
	h := mkPod("h", priority(100))
	q.Add(h)
	clk.Step(500 * time.Millisecond)
	if got := popName(q); got != "h" {
		t.Fatalf("popped %q", got)
	}
	q.Failed(h) // at 0.5s: 1s backoff ends at 1.5s, window 1s, free from 2s
	if got := popName(q); got != "" {
		t.Fatalf("unschedulable pod popped without an event: %q", got)
	}
	for _, n := range []string{"l1", "l2", "l3", "l4"} {
		q.Add(mkPod(n))
	}
	clk.Step(100 * time.Millisecond)
	q.MoveAll()
	steps := []struct {
		at   time.Duration
		want string
	}{
		{600 * time.Millisecond, "l1"},  // h still backing off: low priority first
		{1900 * time.Millisecond, "l2"}, // same window as the expiry
		{2 * time.Second, "h"},          // backoff over: h outranks l3
	}
	for _, st := range steps {
		clk.SetTime(t0.Add(st.at))
		if got := popName(q); got != st.want {
			t.Fatalf("at %v popped %q, want %q", st.at, got, st.want)
		}
	}
	q.Failed(h) // second failure at 2s: 2s backoff → free from 5s
	q.MoveAll()
	clk.SetTime(t0.Add(4900 * time.Millisecond))
	if got := popName(q); got != "l3" {
		t.Fatalf("at 4.9s popped %q, want l3", got)
	}
	clk.SetTime(t0.Add(5 * time.Second))
	if got := popName(q); got != "h" {
		t.Fatalf("at 5s popped %q, want h", got)
	}
	// With activeQ empty a backing-off pod is popped at once.
	q.Failed(h)
	q.MoveAll()
	if got := popName(q); got != "l4" {
		t.Fatalf("popped %q, want l4", got)
	}
	if got := popName(q); got != "h" {
		t.Fatalf("popped %q, want h from backoffQ", got)
	}
}

// Pods unschedulable for more than 5 minutes are moved by the flush that
// runs every 30s from the queue's start.
func TestQueueFlush(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := NewQueue(clk)
	p := mkPod("p")
	q.Add(p)
	clk.Step(10 * time.Second)
	popName(q)
	q.Failed(p)
	// Unschedulable since 10s: over 5 minutes at 310s; flush ticks at 300s
	// and 330s.
	next, ok := q.NextTime()
	if !ok || !next.Equal(t0.Add(330*time.Second)) {
		t.Fatalf("NextTime = %v %v, want t0+330s", next.Sub(t0), ok)
	}
	clk.SetTime(t0.Add(329 * time.Second))
	if got := popName(q); got != "" {
		t.Fatalf("popped %q before the flush", got)
	}
	clk.SetTime(t0.Add(330 * time.Second))
	if got := popName(q); got != "p" {
		t.Fatalf("popped %q after the flush, want p", got)
	}
	if _, ok := q.NextTime(); ok {
		t.Fatal("NextTime with only a pod in flight")
	}
}

// An event that arrives while a pod is being scheduled sends it back to the
// queue when it fails, rather than to unschedulablePods.
func TestQueueEventInFlight(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := NewQueue(clk)
	p := mkPod("p")
	q.Add(p)
	popName(q)
	q.MoveAll()
	q.Failed(p)
	if next, ok := q.NextTime(); !ok || !next.Equal(t0) {
		t.Fatalf("NextTime = %v %v, want now", next, ok)
	}
	if got := popName(q); got != "p" {
		t.Fatalf("popped %q, want p", got)
	}
}

func TestQueueGatesUpdatesAndDeletes(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := NewQueue(clk)
	gated := mkPod("gated", func(p *corev1.Pod) {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}}
	})
	q.Add(gated)
	if got := popName(q); got != "" {
		t.Fatalf("gated pod popped")
	}
	q.MoveAll()
	if _, ok := q.NextTime(); ok || popName(q) != "" {
		t.Fatal("gated pod became ready without losing its gates")
	}
	q.Add(mkPod("gated"))
	if got := popName(q); got != "gated" {
		t.Fatalf("ungated pod: popped %q", got)
	}

	// An unschedulable pod moves when its spec or labels change, not its status.
	u := mkPod("u")
	q.Add(u)
	popName(q)
	q.Failed(u)
	withStatus := mkPod("u")
	withStatus.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}
	q.Add(withStatus)
	if got := popName(q); got != "" {
		t.Fatalf("status update moved the pod")
	}
	q.Add(mkPod("u", labelsOf("v", "2")))
	if got := popName(q); got != "u" {
		t.Fatalf("label update: popped %q", got)
	}

	// A status update while in flight is not an event: the failed pod waits.
	popName(q) // nothing: u is in flight already
	withStatus.Labels = map[string]string{"v": "2"}
	q.Add(withStatus)
	q.Failed(u)
	if got := popName(q); got != "" {
		t.Fatalf("status update in flight requeued the pod: %q", got)
	}
	q.MoveAll()
	if got := popName(q); got != "u" {
		t.Fatalf("after MoveAll popped %q, want u", got)
	}

	// Deleted pods leave from anywhere; a pod deleted in flight is not requeued.
	q.Failed(u)
	q.Delete(u)
	q.Add(mkPod("a"))
	q.Delete(mkPod("a"))
	q.MoveAll()
	if got := popName(q); got != "" || q.Len() != 1 {
		t.Fatalf("after deletes popped %q, len %d (the ungated pod is in flight)", got, q.Len())
	}
	q.Add(mkPod("gated", on("n1"))) // bound: leaves the queue
	b := mkPod("b")
	q.Add(b)
	popName(q)
	q.Delete(b)
	q.Failed(b)
	if q.Len() != 0 {
		t.Fatalf("queue holds %d pods, want 0", q.Len())
	}
}

// A cluster with no node at all fails a pod with an error, not a fit
// failure: it backs off by its consecutive errors in the error backoffQ,
// which neither Pop nor cluster events shorten. The attempt times are
// those kube-scheduler v1.37.2 logged in our lab for a pod created at
// hh:mm:24.04 while no node existed: 26, 29, 34, 43, 54.
func TestErrorBackoffWhileNoNodeExists(t *testing.T) {
	start := time.Date(2026, 12, 1, 16, 1, 24, 43_000_000, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	q := NewQueue(clk)
	p := mkPod("web")
	q.Add(p)
	var attempts []string
	for i := 0; i < 6; i++ {
		got, ok := q.Pop()
		if !ok {
			t.Fatalf("attempt %d: nothing to pop at %s", i, clk.Now().Format("05.000"))
		}
		attempts = append(attempts, clk.Now().Format("05"))
		q.Errored(got)
		q.MoveAll() // a node appears: the error backoff is not cut short
		if _, ok := q.Pop(); ok {
			t.Fatalf("attempt %d: popped during the error backoff", i)
		}
		next, ok := q.NextTime()
		if !ok {
			t.Fatalf("attempt %d: no next time", i)
		}
		clk.SetTime(next)
	}
	if got, want := strings.Join(attempts, " "), "24 26 29 34 43 54"; got != want {
		t.Fatalf("attempts at seconds %s, want %s", got, want)
	}
}
