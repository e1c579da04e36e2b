package lifecycle

import (
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TerminationReason is why a claim being terminated was deleted, as the
// claim itself says: its disruption command's reason (drifted,
// underutilized, expired, interrupted, …), else the reason it was marked
// Disrupting with (spot_interruption, instance_stopping, …), else deleted
// (by a user, its pool's deletion, or a controller that noted no reason).
// The metric label form: snake case.
func TerminationReason(claim *nsv1.NodeClaim) string {
	if r := claim.Annotations[nsv1.AnnotationDisruptionReason]; r != "" {
		return SnakeCase(r)
	}
	for _, c := range claim.Status.Conditions {
		if c.Type == nsv1.ConditionDisrupting && c.Status == metav1.ConditionTrue && c.Reason != "" {
			return SnakeCase(c.Reason)
		}
	}
	return "deleted"
}

// SnakeCase turns a CamelCase reason (ReturnToSpot) into a metric label
// value (return_to_spot).
func SnakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
