package interruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/interruption"
)

// TestCapacityBlockNodesAreMarkedBeforeTheReclaim: a claim in a Capacity
// Block ending in two hours is left alone, the reconciler coming back 40
// minutes before the end; then it is marked CapacityBlockExpiring with the
// reclaim (30 minutes before the end) as its deadline, its node tainted and
// the executor woken. A claim in an ODCR is not watched.
func TestCapacityBlockNodesAreMarkedBeforeTheReclaim(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 1)
	id := "cr-0b10c0000000000aa"
	end := e.clk.Now().Add(2 * time.Hour)
	// The fixture's claims name the node class "default" (a claim's spec is
	// immutable); the API server is shared, so it may exist already.
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-0abc"}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0abc"}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       ptrTo("nodes"),
	}}
	if err := h.Direct.Create(e.ctx, nc); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	if err := h.Direct.Get(e.ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	endTime := metav1.NewTime(end)
	nc.Status.CapacityReservations = append(nc.Status.CapacityReservations, awsv1.CapacityReservation{ID: id, ReservationType: awsv1.CapacityReservationTypeCapacityBlock,
		InstanceType: in.Type, AvailabilityZone: in.Zone, AvailableInstanceCount: 0, EndTime: &endTime})
	if err := h.Direct.Status().Update(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	claim := e.get(f.claim)
	claim.Labels[awsv1.LabelCapacityReservationID] = id
	claim.Labels[awsv1.LabelCapacityReservationType] = awsv1.CapacityReservationTypeCapacityBlock
	if err := h.Direct.Update(e.ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)
	h.Cached(t, nc)
	cb := NewCapacityBlocks(e.deps)
	if ok := cb.Controller().ForPredicate(claim); !ok {
		t.Fatal("the reconciler does not watch a claim in a Capacity Block")
	}
	odcr := claim.DeepCopy()
	odcr.Labels[awsv1.LabelCapacityReservationType] = awsv1.CapacityReservationTypeDefault
	if cb.Controller().ForPredicate(odcr) {
		t.Error("the reconciler watches a claim in an ODCR")
	}

	e.woken = nil
	res, err := cb.Reconcile(e.ctx, reqFor(claim))
	if err != nil {
		t.Fatal(err)
	}
	if want := 80 * time.Minute; res.RequeueAfter != want {
		t.Errorf("2h before the end: RequeueAfter %s, want %s (40m before the end)", res.RequeueAfter, want)
	}
	if interruption.MarkOf(e.get(f.claim)).Marked() || len(e.woken) > 0 {
		t.Fatal("marked 2h before the block's end")
	}

	e.clk.Step(res.RequeueAfter)
	if _, err := cb.Reconcile(e.ctx, reqFor(claim)); err != nil {
		t.Fatal(err)
	}
	got := e.get(f.claim)
	mark := interruption.MarkOf(got)
	if mark.Reason != nsv1.DisruptingReasonCapacityBlockExpiring || !mark.Deadline.Equal(end.Add(-30*time.Minute)) {
		t.Fatalf("mark %+v, want CapacityBlockExpiring with deadline %s", mark, end.Add(-30*time.Minute))
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionDisrupting); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Disrupting condition %+v", c)
	}
	node := &corev1.Node{}
	if err := h.Direct.Get(e.ctx, client.ObjectKeyFromObject(f.node), node); err != nil {
		t.Fatal(err)
	}
	if !hasTaint(node, nsv1.DisruptedTaint) {
		t.Errorf("the block's node was not tainted: %v", node.Spec.Taints)
	}
	if len(e.woken) == 0 {
		t.Error("the disruption executor was not woken")
	}
	if deleting(t, e, f.claim) {
		t.Error("the reconciler deleted the claim; that is the executor's")
	}
}

func ptrTo[T any](v T) *T { return &v }
