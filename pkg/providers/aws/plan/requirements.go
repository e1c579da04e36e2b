package plan

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Matcher checks offerings' labels against a claim's requirements with
// node-affinity semantics (In, NotIn, Exists, DoesNotExist, Gt, Lt, and the
// Gte/Lte extensions).
//
// A requirement on a key no instance type defines (a team label from the
// pool template, say) says nothing about which type to buy: the node gets
// that label from the claim. Such requirements are ignored: Matches only
// checks keys in the definedKeys set the caller passes.
type Matcher struct {
	reqs []requirement
}

// requirement is one checked requirement; nsv1's Allows says what meets it.
type requirement struct {
	nsv1.NodeSelectorRequirementWithMinValues
}

// NewMatcher checks the requirements: a numeric operator needs exactly one
// integer value, and the operator must be known.
func NewMatcher(reqs []nsv1.NodeSelectorRequirementWithMinValues) (*Matcher, error) {
	m := &Matcher{}
	for _, r := range reqs {
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, nsv1.NodeSelectorOpGte, nsv1.NodeSelectorOpLte:
			if len(r.Values) != 1 {
				return nil, fmt.Errorf("requirement %s %s needs exactly one value", r.Key, r.Operator)
			}
			if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
				return nil, fmt.Errorf("requirement %s %s: %w", r.Key, r.Operator, err)
			}
		default:
			return nil, fmt.Errorf("requirement %s has unknown operator %q", r.Key, r.Operator)
		}
		m.reqs = append(m.reqs, requirement{r})
	}
	return m, nil
}

// Matches reports whether labels satisfy every requirement whose key is in definedKeys.
func (m *Matcher) Matches(labels map[string]string, definedKeys map[string]bool) bool {
	return m.MatchesFunc(func(k string) (string, bool) { v, ok := labels[k]; return v, ok }, definedKeys)
}

// MatchesFunc is Matches over a label lookup, so callers can overlay an
// offering's zone and capacity type on a type's labels without a new map.
func (m *Matcher) MatchesFunc(label func(string) (string, bool), definedKeys map[string]bool) bool {
	for _, r := range m.reqs {
		if definedKeys[r.Key] && !r.matches(label) {
			return false
		}
	}
	return true
}

// Allows reports whether the requirements on key admit value (for keys such
// as capacity type, checked before any offering is at hand).
func (m *Matcher) Allows(key, value string) bool {
	return m.Matches(map[string]string{key: value}, map[string]bool{key: true})
}

func (r requirement) matches(label func(string) (string, bool)) bool {
	v, ok := label(r.Key)
	return r.Allows(v, ok)
}

// Keys are the distinct keys the requirements constrain.
func (m *Matcher) Keys() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range m.reqs {
		if !seen[r.Key] {
			seen[r.Key] = true
			out = append(out, r.Key)
		}
	}
	return out
}
