package interruption

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
)

// An interruptible capacity reservation's warning, delivered twice, marks
// the claim once as EC2 says (reason CapacityReservationInterruption, the
// warning's instance-termination-time as deadline), taints the node, wakes
// the executor and keeps the replacement off the reservation's offering for
// a while; it is not a spot interruption (no spot ICE mark, no spot history).
func TestReservationWarningMarksTheClaim(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 1)
	end := e.clk.Now().Add(150 * time.Second).UTC()
	warning := strings.NewReplacer("INSTANCE", in.ID, "TIME", e.clk.Now().UTC().Format(time.RFC3339), "END", end.Format(time.RFC3339)).Replace(
		`{"version":"0","id":"cr-warn-1","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"TIME","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/INSTANCE"],"detail":{"instance-id":"INSTANCE","instance-action":"terminate","instance-termination-time":"END","azId":"use1-az1"}}`)
	e.send(warning)
	e.step()
	e.send(warning)
	e.step()

	claim := e.get(f.claim)
	if c := meta.FindStatusCondition(claim.Status.Conditions, nsv1.ConditionDisrupting); c == nil || c.Reason != nsv1.DisruptingReasonCapacityReservationInterruption {
		t.Fatalf("Disrupting condition %+v, want reason %s", c, nsv1.DisruptingReasonCapacityReservationInterruption)
	}
	if got := claim.Annotations[nsv1.AnnotationDisruptionDeadline]; got != end.Format(time.RFC3339) {
		t.Errorf("deadline %q, want the warning's termination time %s", got, end.Format(time.RFC3339))
	}
	node := &corev1.Node{}
	if err := h.Direct.Get(e.ctx, client.ObjectKeyFromObject(f.node), node); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(node.Spec.Taints, func(tn corev1.Taint) bool { return tn.MatchTaint(&nsv1.DisruptedTaint) }) {
		t.Errorf("node taints %v, want the disrupted taint", node.Spec.Taints)
	}
	if !slices.Contains(e.woken, "interruption/"+claim.Name) {
		t.Errorf("woken %v, want the executor woken for %s", e.woken, claim.Name)
	}
	if !e.ice.IsUnavailable(in.Type, in.Zone, nsv1.CapacityTypeReserved) {
		t.Error("the reserved offering is not marked unavailable after the reclaim")
	}
	if e.ice.IsUnavailable(in.Type, in.Zone, nsv1.CapacityTypeSpot) || e.history.Observed(in.Type, in.Zone) != 0 {
		t.Error("a reservation's reclaim was taken for a spot interruption")
	}
	im := e.m.Interruption
	if got := testutil.ToFloat64(im.Interruptions.WithLabelValues(e.pool, string(messages.KindCapacityReservationInterruption), in.CapacityType, in.Type, in.Zone)); got != 1 {
		t.Errorf("interruptions counted %v, want 1", got)
	}
}
