package v1

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// NodeSelectorRequirementWithMinValues is a node selector requirement that
// may also ask for a minimum number of distinct values among the instance
// types a claim may launch (diversification for spot).
//
// +kubebuilder:validation:XValidation:message="operator In needs at least one value",rule="self.operator != 'In' || (has(self.values) && size(self.values) > 0)"
// +kubebuilder:validation:XValidation:message="operators Gt, Lt, Gte and Lte take exactly one value, a non-negative integer",rule="!(self.operator in ['Gt','Lt','Gte','Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]+$'))"
// +kubebuilder:validation:XValidation:message="operators Exists and DoesNotExist take no values",rule="!(self.operator in ['Exists','DoesNotExist']) || !has(self.values) || size(self.values) == 0"
// +kubebuilder:validation:XValidation:message="minValues must not exceed the number of values",rule="!has(self.minValues) || self.operator != 'In' || (has(self.values) && self.minValues <= size(self.values))"
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +required
	Key string `json:"key"`
	// Operator is In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values for In/NotIn (a set) or Gt/Lt/Gte/Lte (one integer).
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the minimum number of distinct values of Key that the
	// instance types of a launch must span.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// Operators beyond the core NodeSelectorOperator set.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// Allows says whether a node whose label Key has the value v (present) or
// has no such label (!present) meets the requirement. A numeric operator
// is met only by an integer value beyond its one integer bound; an
// unknown operator is met by nothing.
func (r NodeSelectorRequirementWithMinValues) Allows(v string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte:
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		bound, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch r.Operator {
		case corev1.NodeSelectorOpGt:
			return have > bound
		case corev1.NodeSelectorOpLt:
			return have < bound
		case NodeSelectorOpGte:
			return have >= bound
		default:
			return have <= bound
		}
	}
	return false
}

// NodeClassReference points at the provider-specific node class of a pool.
type NodeClassReference struct {
	// Group of the node class, e.g. aws.nodesmith.sh.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeClassRef.group is immutable"
	// +required
	Group string `json:"group"`
	// Kind of the node class, e.g. EC2NodeClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeClassRef.kind is immutable"
	// +required
	Kind string `json:"kind"`
	// Name of the node class.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}
