package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestTerminationReason(t *testing.T) {
	marked := []metav1.Condition{{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue, Reason: nsv1.DisruptingReasonSpotInterruption}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		conds       []metav1.Condition
		want        string
	}{
		{"a disruption command's reason", map[string]string{nsv1.AnnotationDisruptionReason: string(nsv1.DisruptionReasonReturnToSpot)}, nil, "return_to_spot"},
		{"the command wins over the mark", map[string]string{nsv1.AnnotationDisruptionReason: string(nsv1.DisruptionReasonDrifted)}, marked, "drifted"},
		{"marked by the interruption handler", nil, marked, "spot_interruption"},
		{"a mark no longer True", nil, []metav1.Condition{{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionFalse, Reason: "Done"}}, "deleted"},
		{"nothing said", nil, nil, "deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
			c.Status.Conditions = tc.conds
			if got := TerminationReason(c); got != tc.want {
				t.Errorf("TerminationReason = %q, want %q", got, tc.want)
			}
		})
	}
}
