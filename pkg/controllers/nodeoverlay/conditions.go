package nodeoverlay

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodesmith/nodesmith/apis/v1alpha1"
)

// Condition reasons.
const (
	ReasonApplied     = "Applied"
	ReasonInvalid     = "Invalid"
	ReasonConflicting = "EqualWeightConflict"
	ReasonNoConflict  = "NoConflict"
)

// conditions are an overlay's Ready and Conflicting conditions given
// whether it parses (parseErr) and the overlays of equal weight it
// conflicts with.
func conditions(parseErr error, conflicts []string) []metav1.Condition {
	if parseErr != nil {
		return []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonInvalid, Message: parseErr.Error()},
			{Type: v1alpha1.ConditionConflicting, Status: metav1.ConditionFalse, Reason: ReasonInvalid, Message: "the overlay is not applied"},
		}
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonApplied, Message: "applied to the instance types it selects"}
	if len(conflicts) == 0 {
		return []metav1.Condition{ready, {Type: v1alpha1.ConditionConflicting, Status: metav1.ConditionFalse, Reason: ReasonNoConflict}}
	}
	return []metav1.Condition{ready, {Type: v1alpha1.ConditionConflicting, Status: metav1.ConditionTrue, Reason: ReasonConflicting,
		Message: fmt.Sprintf("has the weight of %s and selects offerings or resources they also set; the alphabetically first name wins: give them different weights",
			strings.Join(conflicts, ", "))}}
}
