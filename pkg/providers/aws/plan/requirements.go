package plan

import (
	"fmt"
	"slices"
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

type requirement struct {
	key    string
	op     corev1.NodeSelectorOperator
	values []string
	num    int64 // Gt/Lt bound; Gte/Lte are turned into Gt/Lt
}

// NewMatcher validates and compiles the requirements.
func NewMatcher(reqs []nsv1.NodeSelectorRequirementWithMinValues) (*Matcher, error) {
	m := &Matcher{}
	for _, r := range reqs {
		c := requirement{key: r.Key, op: r.Operator, values: r.Values}
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, nsv1.NodeSelectorOpGte, nsv1.NodeSelectorOpLte:
			if len(r.Values) != 1 {
				return nil, fmt.Errorf("requirement %s %s needs exactly one value", r.Key, r.Operator)
			}
			n, err := strconv.ParseInt(r.Values[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("requirement %s %s: %w", r.Key, r.Operator, err)
			}
			c.num = n
			switch r.Operator {
			case nsv1.NodeSelectorOpGte:
				c.op, c.num = corev1.NodeSelectorOpGt, n-1
			case nsv1.NodeSelectorOpLte:
				c.op, c.num = corev1.NodeSelectorOpLt, n+1
			}
		default:
			return nil, fmt.Errorf("requirement %s has unknown operator %q", r.Key, r.Operator)
		}
		m.reqs = append(m.reqs, c)
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
		if definedKeys[r.key] && !r.matches(label) {
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
	v, ok := label(r.key)
	switch r.op {
	case corev1.NodeSelectorOpIn:
		return ok && slices.Contains(r.values, v)
	case corev1.NodeSelectorOpNotIn:
		return !ok || !slices.Contains(r.values, v)
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		if r.op == corev1.NodeSelectorOpGt {
			return n > r.num
		}
		return n < r.num
	}
	return false
}

// Keys are the distinct keys the requirements constrain.
func (m *Matcher) Keys() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range m.reqs {
		if !seen[r.key] {
			seen[r.key] = true
			out = append(out, r.key)
		}
	}
	return out
}
