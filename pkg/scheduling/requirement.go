package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Requirement is the set of values one label key may take, in a form closed
// under intersection: a finite set (In, DoesNotExist) or the complement of a
// finite set (NotIn, Exists), optionally bounded by integer limits (Gt, Lt,
// Gte, Lte), plus whether the label may be absent altogether. NotIn and
// DoesNotExist admit a node without the label; In, Exists and the numeric
// operators do not, as in kube-scheduler.
type Requirement struct {
	Key string
	// complement: values lists what is excluded; otherwise what is allowed.
	complement bool
	values     []string // sorted, unique
	// greaterThan and lessThan are exclusive integer bounds (math.MinInt64 /
	// math.MaxInt64 when unbounded).
	greaterThan int64
	lessThan    int64
	absentOK    bool
	// MinValues is the least number of distinct values the instance types of
	// a launch must span (nil: no minimum).
	MinValues *int
}

// NewRequirement builds a requirement from an operator. Gt/Lt/Gte/Lte take
// one integer value; an unparsable one yields an empty (unsatisfiable) set.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) *Requirement {
	r := &Requirement{Key: key, greaterThan: math.MinInt64, lessThan: math.MaxInt64}
	switch op {
	case corev1.NodeSelectorOpIn:
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement, r.absentOK = true, true
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.absentOK = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, nsv1.NodeSelectorOpGte, nsv1.NodeSelectorOpLte:
		r.complement = true
		n, err := parseBound(values)
		if err != nil {
			r.complement = false // empty set: nothing satisfies a malformed bound
			break
		}
		switch op {
		case corev1.NodeSelectorOpGt:
			r.greaterThan = n
		case corev1.NodeSelectorOpLt:
			r.lessThan = n
		case nsv1.NodeSelectorOpGte:
			r.greaterThan = n - 1
		case nsv1.NodeSelectorOpLte:
			r.lessThan = n + 1
		}
	default:
		// Unknown operators match nothing rather than everything.
	}
	return r
}

func parseBound(values []string) (int64, error) {
	if len(values) != 1 {
		return 0, fmt.Errorf("numeric operator needs exactly one value, got %d", len(values))
	}
	return strconv.ParseInt(values[0], 10, 64)
}

func sortedUnique(values []string) []string {
	out := append([]string(nil), values...)
	sort.Strings(out)
	w := 0
	for i, v := range out {
		if i > 0 && v == out[w-1] {
			continue
		}
		out[w] = v
		w++
	}
	return out[:w]
}

func (r *Requirement) bounded() bool {
	return r.greaterThan != math.MinInt64 || r.lessThan != math.MaxInt64
}

func (r *Requirement) withinBounds(v string) bool {
	if !r.bounded() {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return n > r.greaterThan && n < r.lessThan
}

func contains(sorted []string, v string) bool {
	i := sort.SearchStrings(sorted, v)
	return i < len(sorted) && sorted[i] == v
}

// Has reports whether a label with value v satisfies the requirement.
func (r *Requirement) Has(v string) bool {
	if r.complement {
		return !contains(r.values, v) && r.withinBounds(v)
	}
	return contains(r.values, v) && r.withinBounds(v)
}

// AllowsAbsent reports whether a node without the label satisfies it.
func (r *Requirement) AllowsAbsent() bool { return r.absentOK }

// Matches evaluates the requirement against a label that may be absent.
func (r *Requirement) Matches(v string, present bool) bool {
	if !present {
		return r.absentOK
	}
	return r.Has(v)
}

// Finite reports whether the allowed values are an enumerable set.
func (r *Requirement) Finite() bool { return !r.complement }

// Values returns the allowed values of a finite requirement (sorted).
func (r *Requirement) Values() []string {
	if r.complement {
		return nil
	}
	out := make([]string, 0, len(r.values))
	for _, v := range r.values {
		if r.withinBounds(v) {
			out = append(out, v)
		}
	}
	return out
}

// Len is the number of allowed values, math.MaxInt for a complement.
func (r *Requirement) Len() int {
	if r.complement {
		return math.MaxInt
	}
	return len(r.Values())
}

// Satisfiable reports whether some node can meet the requirement: it admits a
// value or admits the label's absence.
func (r *Requirement) Satisfiable() bool {
	if r.absentOK {
		return true
	}
	if r.complement {
		// A complement of a finite set is infinite unless both bounds pinch it.
		if r.greaterThan == math.MinInt64 || r.lessThan == math.MaxInt64 {
			return true
		}
		room := r.lessThan - r.greaterThan - 1
		excluded := int64(0)
		for _, v := range r.values {
			// Only a canonical spelling removes an integer: NotIn [06]
			// still leaves the label value 6.
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && strconv.FormatInt(n, 10) == v && r.withinBounds(v) {
				excluded++
			}
		}
		return room > excluded
	}
	return r.Len() > 0
}

// Intersect returns the values both requirements admit. MinValues keeps the
// larger of the two.
func (r *Requirement) Intersect(o *Requirement) *Requirement {
	out := &Requirement{
		Key:         r.Key,
		greaterThan: max(r.greaterThan, o.greaterThan),
		lessThan:    min(r.lessThan, o.lessThan),
		absentOK:    r.absentOK && o.absentOK,
		MinValues:   maxMinValues(r.MinValues, o.MinValues),
	}
	switch {
	case r.complement && o.complement:
		out.complement = true
		out.values = union(r.values, o.values)
	case r.complement:
		out.values = difference(o.values, r.values)
	case o.complement:
		out.values = difference(r.values, o.values)
	default:
		out.values = intersection(r.values, o.values)
	}
	if !out.complement && out.bounded() {
		kept := out.values[:0:0]
		for _, v := range out.values {
			if out.withinBounds(v) {
				kept = append(kept, v)
			}
		}
		out.values = kept
	}
	return out
}

func maxMinValues(a, b *int) *int {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case *a >= *b:
		return a
	default:
		return b
	}
}

func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	return sortedUnique(out)
}

func difference(a, b []string) []string {
	out := make([]string, 0, len(a))
	for _, v := range a {
		if !contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

func intersection(a, b []string) []string {
	out := make([]string, 0, min(len(a), len(b)))
	for _, v := range a {
		if contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

// Operator and values that express the requirement as a node selector term.
// Bounded complements become Gt/Lt (one of them; a requirement with both
// bounds is rendered by NodeSelectorRequirements as two entries).
func (r *Requirement) selectorRequirements() []nsv1.NodeSelectorRequirementWithMinValues {
	var out []nsv1.NodeSelectorRequirementWithMinValues
	add := func(op corev1.NodeSelectorOperator, values ...string) {
		out = append(out, nsv1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: op, Values: values, MinValues: r.MinValues})
	}
	switch {
	case !r.complement && r.absentOK && len(r.Values()) == 0:
		add(corev1.NodeSelectorOpDoesNotExist)
	case !r.complement:
		add(corev1.NodeSelectorOpIn, r.Values()...)
	case r.absentOK && len(r.values) > 0:
		add(corev1.NodeSelectorOpNotIn, r.values...)
	case r.absentOK:
		// NotIn [] admits everything: no requirement at all.
	default:
		if len(r.values) > 0 {
			add(corev1.NodeSelectorOpNotIn, r.values...)
			if !r.bounded() {
				add(corev1.NodeSelectorOpExists)
			}
		}
		if r.greaterThan != math.MinInt64 {
			add(corev1.NodeSelectorOpGt, strconv.FormatInt(r.greaterThan, 10))
		}
		if r.lessThan != math.MaxInt64 {
			add(corev1.NodeSelectorOpLt, strconv.FormatInt(r.lessThan, 10))
		}
		if len(r.values) == 0 && !r.bounded() {
			add(corev1.NodeSelectorOpExists)
		}
	}
	return out
}

// String renders the requirement the way a user wrote it, for explanations.
func (r *Requirement) String() string {
	parts := make([]string, 0, 2)
	for _, s := range r.selectorRequirements() {
		switch s.Operator {
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			parts = append(parts, fmt.Sprintf("%s %s", s.Key, s.Operator))
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			parts = append(parts, fmt.Sprintf("%s %s %s", s.Key, s.Operator, s.Values[0]))
		default:
			parts = append(parts, fmt.Sprintf("%s %s %s", s.Key, s.Operator, abbreviate(s.Values, 8)))
		}
	}
	if len(parts) == 0 {
		return r.Key + " (any)"
	}
	return strings.Join(parts, ", ")
}

func abbreviate(values []string, n int) string {
	if len(values) <= n {
		return "[" + strings.Join(values, " ") + "]"
	}
	return fmt.Sprintf("[%s … %d more]", strings.Join(values[:n], " "), len(values)-n)
}
