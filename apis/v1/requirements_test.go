package v1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRequirementAllows(t *testing.T) {
	req := func(op corev1.NodeSelectorOperator, values ...string) NodeSelectorRequirementWithMinValues {
		return NodeSelectorRequirementWithMinValues{Key: "k", Operator: op, Values: values}
	}
	tests := []struct {
		name    string
		r       NodeSelectorRequirementWithMinValues
		v       string
		present bool
		want    bool
	}{
		{"In, listed", req(corev1.NodeSelectorOpIn, "a", "b"), "b", true, true},
		{"In, not listed", req(corev1.NodeSelectorOpIn, "a"), "c", true, false},
		{"In, absent", req(corev1.NodeSelectorOpIn, "a"), "", false, false},
		{"NotIn, listed", req(corev1.NodeSelectorOpNotIn, "a"), "a", true, false},
		{"NotIn, absent", req(corev1.NodeSelectorOpNotIn, "a"), "", false, true},
		{"Exists", req(corev1.NodeSelectorOpExists), "", true, true},
		{"Exists, absent", req(corev1.NodeSelectorOpExists), "", false, false},
		{"DoesNotExist, present", req(corev1.NodeSelectorOpDoesNotExist), "x", true, false},
		{"DoesNotExist, absent", req(corev1.NodeSelectorOpDoesNotExist), "", false, true},
		{"Gt, above", req(corev1.NodeSelectorOpGt, "4"), "5", true, true},
		{"Gt, equal", req(corev1.NodeSelectorOpGt, "4"), "4", true, false},
		{"Gte, equal", req(NodeSelectorOpGte, "4"), "4", true, true},
		{"Lt, equal", req(corev1.NodeSelectorOpLt, "4"), "4", true, false},
		{"Lte, equal", req(NodeSelectorOpLte, "4"), "4", true, true},
		{"Lte, above", req(NodeSelectorOpLte, "4"), "5", true, false},
		{"Gt, absent", req(corev1.NodeSelectorOpGt, "4"), "", false, false},
		{"Gt, not a number", req(corev1.NodeSelectorOpGt, "4"), "big", true, false},
		{"Gt, malformed bound", req(corev1.NodeSelectorOpGt, "x"), "5", true, false},
		{"Gt, two bounds", req(corev1.NodeSelectorOpGt, "1", "2"), "5", true, false},
		{"unknown operator", req("Near", "a"), "a", true, false},
	}
	for _, tt := range tests {
		if got := tt.r.Allows(tt.v, tt.present); got != tt.want {
			t.Errorf("%s: Allows(%q, %v) = %v, want %v", tt.name, tt.v, tt.present, got, tt.want)
		}
	}
}
