package interruption

import (
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

// selfPod creates the Pod the controller runs as.
func selfPod(t *testing.T, e *env) *types.NamespacedName {
	t.Helper()
	ns := uniq("nodesmith")
	if err := h.Direct.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	p := controllertest.Pod(ns, "controller", "100m")
	e.create(p)
	return &types.NamespacedName{Namespace: ns, Name: p.Name}
}

func queueCondition(t *testing.T, e *env, self *types.NamespacedName) *corev1.PodCondition {
	t.Helper()
	p := &corev1.Pod{}
	if err := h.Direct.Get(e.ctx, *self, p); err != nil {
		t.Fatal(err)
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ConditionQueueReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestMissingQueue: a queue that does not exist is reported (metric, Event
// and condition on the controller's Pod), retried with growing backoff, and
// picked up once it is created.
func TestMissingQueue(t *testing.T) {
	e := newEnv(t)
	self := selfPod(t, e)
	opts := DefaultOptions("not-there")
	opts.WaitTime, opts.Self = 0, self
	q, err := NewQueue(e.deps, e.sqs, opts)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for range 3 {
		res, err := q.Reconcile(e.ctx)
		if err != nil {
			t.Fatalf("a missing queue failed the step: %v", err)
		}
		waits = append(waits, res.RequeueAfter)
	}
	if waits[0] < time.Second || waits[1] <= waits[0] || waits[2] <= waits[1] {
		t.Errorf("backoff %v, want growing from 1s", waits)
	}
	im := e.m.Interruption
	if got := testutil.ToFloat64(im.QueueReady); got != 0 {
		t.Errorf("queue_ready = %v, want 0", got)
	}
	if got := testutil.ToFloat64(im.QueueErrors.WithLabelValues(errQueueMissing)); got != 3 {
		t.Errorf("queue_missing errors = %v, want 3", got)
	}
	c := queueCondition(t, e, self)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != "QueueNotFound" || !strings.Contains(c.Message, "not-there does not exist") {
		t.Fatalf("pod condition = %+v", c)
	}
	if evs := strings.Join(e.drainEvents(), "\n"); strings.Count(evs, "InterruptionQueueUnavailable") != 1 {
		t.Errorf("want one InterruptionQueueUnavailable event, got:\n%s", evs)
	}

	e.world.CreateQueue("not-there", nil)
	if _, err := q.Reconcile(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(im.QueueReady); got != 1 {
		t.Errorf("queue_ready = %v after the queue appeared, want 1", got)
	}
	if c := queueCondition(t, e, self); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("pod condition after recovery = %+v", c)
	}
	if evs := strings.Join(e.drainEvents(), "\n"); !strings.Contains(evs, "InterruptionQueueReady") {
		t.Errorf("no InterruptionQueueReady event:\n%s", evs)
	}
}

// TestAccessDenied: a refused ReceiveMessage names the missing permission
// and is retried; when access is granted the queue is read again.
func TestAccessDenied(t *testing.T) {
	e := newEnv(t)
	var denied atomic.Bool
	denied.Store(true)
	srv := httptest.NewServer(denyWhile(&denied, e.srv, "ReceiveMessage"))
	t.Cleanup(srv.Close)
	sqsClient, _ := clients(srv.URL)
	opts := DefaultOptions(queueName)
	opts.WaitTime = 0
	q, err := NewQueue(e.deps, sqsClient, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Reconcile(e.ctx)
	if err != nil || res.RequeueAfter < time.Second {
		t.Fatalf("step = %+v, %v; want a backoff and no error", res, err)
	}
	if got := testutil.ToFloat64(e.m.Interruption.QueueErrors.WithLabelValues(errAccessDenied)); got != 1 {
		t.Fatalf("access_denied errors = %v, want 1", got)
	}
	if msg := q.health.msg; !strings.Contains(msg, "sqs:ReceiveMessage") {
		t.Errorf("the report does not name the permission: %q", msg)
	}
	denied.Store(false)
	if _, err := q.Reconcile(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(e.m.Interruption.QueueReady); got != 1 {
		t.Errorf("queue_ready = %v once access was granted, want 1", got)
	}
}
