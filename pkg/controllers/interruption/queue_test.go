package interruption

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
)

// TestSpotWarningMarksTheClaim: the simulated AWS reclaims a spot instance
// (it publishes a rebalance recommendation and the warning); one step
// records both on the cluster and deletes them from the queue.
func TestSpotWarningMarksTheClaim(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 2)
	noticeAt := e.clk.Now()
	if err := e.world.Interrupt(in.ID); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(300 * time.Millisecond)
	e.step()

	claim := e.get(f.claim)
	cond := meta.FindStatusCondition(claim.Status.Conditions, nsv1.ConditionDisrupting)
	if cond == nil || cond.Status != "True" || cond.Reason != nsv1.DisruptingReasonSpotInterruption {
		t.Fatalf("Disrupting = %+v, want True/SpotInterruption", cond)
	}
	if got, want := claim.Annotations[nsv1.AnnotationDisruptionDeadline], noticeAt.Add(2*time.Minute).UTC().Format(time.RFC3339); got != want {
		t.Errorf("deadline = %q, want %q (the warning's time plus two minutes)", got, want)
	}
	if got, want := claim.Annotations[nsv1.AnnotationDisruptionNoticed], e.clk.Now().UTC().Format(time.RFC3339Nano); got != want {
		t.Errorf("noticed-at = %q, want %q", got, want)
	}
	node := &corev1.Node{}
	if err := h.Direct.Get(e.ctx, types.NamespacedName{Name: f.node.Name}, node); err != nil {
		t.Fatal(err)
	}
	if !hasTaint(node, nsv1.DisruptedTaint) {
		t.Errorf("node taints %v lack the disrupted taint", node.Spec.Taints)
	}
	if !e.ice.IsUnavailable(in.Type, in.Zone, nsv1.CapacityTypeSpot) {
		t.Errorf("spot offering %s/%s not marked unavailable", in.Type, in.Zone)
	}
	if got := e.history.Observed(in.Type, in.Zone); got <= 0 {
		t.Errorf("interruption not remembered in the pool's history (observed %v)", got)
	}
	if len(e.woken) == 0 {
		t.Error("the disruption executor was not woken")
	}
	if vis, inflight := e.depth(); vis+inflight != 0 {
		t.Errorf("queue holds %d visible and %d in-flight messages, want none", vis, inflight)
	}
	im := e.m.Interruption
	for kind, want := range map[messages.Kind]float64{messages.KindSpotInterruption: 1, messages.KindRebalance: 1} {
		if got := testutil.ToFloat64(im.MessagesReceived.WithLabelValues(string(kind))); got != want {
			t.Errorf("received{%s} = %v, want %v", kind, got, want)
		}
		if got := testutil.ToFloat64(im.MessagesDeleted.WithLabelValues(string(kind))); got != want {
			t.Errorf("deleted{%s} = %v, want %v", kind, got, want)
		}
	}
	if got := testutil.ToFloat64(im.Interruptions.WithLabelValues(e.pool, string(messages.KindSpotInterruption), "spot", in.Type, in.Zone)); got != 1 {
		t.Errorf("spot interruptions of the pool = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(im.Interruptions); got != 1 {
		t.Errorf("%d interruption series, want one (a rebalance recommendation is no interruption)", got)
	}
	if testutil.CollectAndCount(im.TaintLatency) != 1 {
		t.Error("no taint latency observed")
	}
	evs := strings.Join(e.drainEvents(), "\n")
	for _, want := range []string{"SpotInterruption", "RebalanceRecommendation"} {
		if !strings.Contains(evs, want) {
			t.Errorf("events lack %s:\n%s", want, evs)
		}
	}
}

// TestDuplicatesAndGarbageChangeNothing: a notice delivered twice, a
// malformed body, an event type we do not handle and a notice for an
// instance that is not ours are all deleted; the claim is marked once.
func TestDuplicatesAndGarbageChangeNothing(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 1)
	warning := strings.NewReplacer("INSTANCE", in.ID, "TIME", e.clk.Now().UTC().Format(time.RFC3339)).Replace(
		`{"version":"0","id":"dup-1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"TIME","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/INSTANCE"],"detail":{"instance-id":"INSTANCE","instance-action":"terminate"}}`)
	e.send(warning)
	e.send(warning)
	e.send("not json")
	e.send(`{"version":"0","id":"x","detail-type":"EC2 Instance-terminate Lifecycle Action","source":"aws.autoscaling","detail":{}}`)
	e.send(strings.ReplaceAll(warning, in.ID, "i-0123456789abcdef0"))
	e.step()
	// The duplicate delivered in a later batch too.
	e.send(warning)
	e.step()

	if vis, inflight := e.depth(); vis+inflight != 0 {
		t.Fatalf("queue holds %d + %d messages, want none", vis, inflight)
	}
	im := e.m.Interruption
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"spot warnings received", testutil.ToFloat64(im.MessagesReceived.WithLabelValues(string(messages.KindSpotInterruption))), 4},
		{"ignored messages received", testutil.ToFloat64(im.MessagesReceived.WithLabelValues(string(messages.KindIgnored))), 2},
		{"malformed", testutil.ToFloat64(im.MessagesIgnored.WithLabelValues(string(messages.IgnoredMalformed))), 1},
		{"unknown event", testutil.ToFloat64(im.MessagesIgnored.WithLabelValues(string(messages.IgnoredUnknownEvent))), 1},
		{"not managed", testutil.ToFloat64(im.MessagesIgnored.WithLabelValues("not_managed")), 1},
		{"interruptions counted once", testutil.ToFloat64(im.Interruptions.WithLabelValues(e.pool, string(messages.KindSpotInterruption), "spot", in.Type, in.Zone)), 1},
		{"history recorded once", e.history.Observed(in.Type, in.Zone), 10},
		{"all deleted", testutil.ToFloat64(im.MessagesDeleted.WithLabelValues(string(messages.KindSpotInterruption))) +
			testutil.ToFloat64(im.MessagesDeleted.WithLabelValues(string(messages.KindIgnored))), 6},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if c := meta.FindStatusCondition(e.get(f.claim).Status.Conditions, nsv1.ConditionDisrupting); c == nil || c.Reason != nsv1.DisruptingReasonSpotInterruption {
		t.Fatalf("claim not marked: %+v", c)
	}
	// The interrupted spot offering is out of the plans for the cache's
	// 3 minutes; the same type on-demand is not.
	if !e.ice.IsUnavailable(in.Type, in.Zone, nsv1.CapacityTypeSpot) {
		t.Errorf("spot %s in %s not marked unavailable after its interruption", in.Type, in.Zone)
	}
	if e.ice.IsUnavailable(in.Type, in.Zone, nsv1.CapacityTypeOnDemand) {
		t.Errorf("on-demand %s in %s marked unavailable by a spot interruption", in.Type, in.Zone)
	}
	e.clk.Step(catalog.DefaultUnavailableTTL + time.Second)
	if e.ice.IsUnavailable(in.Type, in.Zone, nsv1.CapacityTypeSpot) {
		t.Errorf("spot %s in %s still unavailable after %s", in.Type, in.Zone, catalog.DefaultUnavailableTTL)
	}
}

// TestTerminatedDeletesClaimAndNode: an instance already gone takes its
// claim and Node with it, and the drain deletes its pods at once.
func TestTerminatedDeletesClaimAndNode(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 1)
	e.send(strings.NewReplacer("INSTANCE", in.ID, "TIME", e.clk.Now().UTC().Format(time.RFC3339)).Replace(
		`{"version":"0","id":"st-1","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012","time":"TIME","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/INSTANCE"],"detail":{"instance-id":"INSTANCE","state":"terminated"}}`))
	e.step()
	claim := e.get(f.claim)
	if claim.DeletionTimestamp.IsZero() {
		t.Fatal("claim not deleted")
	}
	if got, want := claim.Annotations[nsv1.AnnotationTerminationTimestamp], e.clk.Now().UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp = %q, want now (%q)", got, want)
	}
	node := &corev1.Node{}
	if err := h.Direct.Get(e.ctx, types.NamespacedName{Name: f.node.Name}, node); err != nil || node.DeletionTimestamp.IsZero() {
		t.Fatalf("node not deleted (err %v)", err)
	}
	if vis, inflight := e.depth(); vis+inflight != 0 {
		t.Fatalf("queue holds %d + %d messages", vis, inflight)
	}
	if !strings.Contains(strings.Join(e.drainEvents(), "\n"), "InstanceTerminated") {
		t.Error("no InstanceTerminated event")
	}
}

// TestOwnTerminationIsNotAnInterruption: a claim deleted by the
// controller (consolidation, expiry…) keeps its finalizer until its
// instance is gone, so the instance's own state-change notices reach the
// queue while the claim still exists. They cut the drain short but are not
// marked, counted or announced as interruptions.
func TestOwnTerminationIsNotAnInterruption(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 1)
	if err := h.Direct.Delete(e.ctx, f.claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, e.get(f.claim))
	for _, state := range []string{"shutting-down", "terminated"} {
		e.send(strings.NewReplacer("INSTANCE", in.ID, "STATE", state, "TIME", e.clk.Now().UTC().Format(time.RFC3339)).Replace(
			`{"version":"0","id":"st-STATE","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012","time":"TIME","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/INSTANCE"],"detail":{"instance-id":"INSTANCE","state":"STATE"}}`))
	}
	e.step()
	claim := e.get(f.claim)
	if c := meta.FindStatusCondition(claim.Status.Conditions, nsv1.ConditionDisrupting); c != nil {
		t.Errorf("claim marked Disrupting (%s: %s) by its own termination", c.Reason, c.Message)
	}
	if got := testutil.CollectAndCount(e.m.Interruption.Interruptions); got != 0 {
		t.Errorf("%d interruption series counted for the controller's own termination", got)
	}
	if got, want := claim.Annotations[nsv1.AnnotationTerminationTimestamp], e.clk.Now().UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp = %q, want now (%q): the drain must not wait for an instance that is gone", got, want)
	}
	if evs := strings.Join(e.drainEvents(), "\n"); strings.Contains(evs, "InstanceTerminated") {
		t.Errorf("interruption events published for the controller's own termination:\n%s", evs)
	}
	if vis, inflight := e.depth(); vis+inflight != 0 {
		t.Errorf("queue holds %d + %d messages", vis, inflight)
	}
}

// TestFailedActionStaysOnTheQueue: when the claim cannot be written the
// message is not deleted; it comes back after the visibility timeout and is
// handled then.
func TestFailedActionStaysOnTheQueue(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 1)
	// A Fresh reader that cannot read the claim makes the action fail.
	e.queue.Fresh = failingReader{}
	if err := e.world.Interrupt(in.ID); err != nil {
		t.Fatal(err)
	}
	e.step()
	if vis, inflight := e.depth(); inflight != 2 || vis != 0 {
		t.Fatalf("after a failed action the queue holds %d visible, %d in flight; want both in flight", vis, inflight)
	}
	if got := testutil.ToFloat64(e.m.Interruption.MessageErrors.WithLabelValues(string(messages.KindSpotInterruption))); got != 1 {
		t.Errorf("message errors = %v, want 1", got)
	}
	e.queue.Fresh = h.Direct
	e.clk.Step(DefaultVisibilityTimeout)
	e.step()
	if vis, inflight := e.depth(); vis+inflight != 0 {
		t.Fatalf("after redelivery the queue holds %d + %d messages", vis, inflight)
	}
	if c := meta.FindStatusCondition(e.get(f.claim).Status.Conditions, nsv1.ConditionDisrupting); c == nil || c.Reason != nsv1.DisruptingReasonSpotInterruption {
		t.Fatalf("claim not marked after redelivery: %+v", c)
	}
}

func hasTaint(n *corev1.Node, t corev1.Taint) bool {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}
