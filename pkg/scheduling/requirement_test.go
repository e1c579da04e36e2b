package scheduling

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

const (
	opIn    = corev1.NodeSelectorOpIn
	opNotIn = corev1.NodeSelectorOpNotIn
	opEx    = corev1.NodeSelectorOpExists
	opDNE   = corev1.NodeSelectorOpDoesNotExist
	opGt    = corev1.NodeSelectorOpGt
	opLt    = corev1.NodeSelectorOpLt
	opGte   = nsv1.NodeSelectorOpGte
	opLte   = nsv1.NodeSelectorOpLte
)

type term struct {
	op     corev1.NodeSelectorOperator
	values []string
}

func t(op corev1.NodeSelectorOperator, v ...string) term { return term{op, v} }

// absent is the probe for a node without the label.
const absent = "<absent>"

// TestRequirementIntersect intersects requirements written as operators and
// checks, for probe label values, which ones the result admits, whether it
// is satisfiable, and its value list when finite.
func TestRequirementIntersect(t_ *testing.T) {
	probes := []string{absent, "a", "b", "c", "4", "5", "6", "7", "10", "06", "x1"}
	cases := []struct {
		name        string
		terms       []term
		admits      []string // every other probe must be rejected
		satisfiable bool
		values      []string // Values() when finite; nil for complements
		finite      bool
	}{
		{"In alone", []term{t(opIn, "b", "a", "a")}, []string{"a", "b"}, true, []string{"a", "b"}, true},
		{"In ∩ In overlap", []term{t(opIn, "a", "b"), t(opIn, "b", "c")}, []string{"b"}, true, []string{"b"}, true},
		{"In ∩ In disjoint", []term{t(opIn, "a"), t(opIn, "b")}, nil, false, []string{}, true},
		{"In empty", []term{t(opIn)}, nil, false, []string{}, true},
		{"NotIn alone admits absent", []term{t(opNotIn, "a")}, []string{absent, "b", "c", "4", "5", "6", "7", "10", "06", "x1"}, true, nil, false},
		{"In ∩ NotIn", []term{t(opIn, "a", "b", "c"), t(opNotIn, "b")}, []string{"a", "c"}, true, []string{"a", "c"}, true},
		{"NotIn ∩ NotIn unions exclusions", []term{t(opNotIn, "a"), t(opNotIn, "b")}, []string{absent, "c", "4", "5", "6", "7", "10", "06", "x1"}, true, nil, false},
		{"In ∩ NotIn same value", []term{t(opIn, "a"), t(opNotIn, "a")}, nil, false, []string{}, true},
		{"Exists rejects absent", []term{t(opEx)}, []string{"a", "b", "c", "4", "5", "6", "7", "10", "06", "x1"}, true, nil, false},
		{"DoesNotExist admits only absent", []term{t(opDNE)}, []string{absent}, true, []string{}, true},
		{"Exists ∩ DoesNotExist", []term{t(opEx), t(opDNE)}, nil, false, []string{}, true},
		{"NotIn ∩ DoesNotExist", []term{t(opNotIn, "a"), t(opDNE)}, []string{absent}, true, []string{}, true},
		{"In ∩ DoesNotExist", []term{t(opIn, "a"), t(opDNE)}, nil, false, []string{}, true},
		{"Exists ∩ NotIn", []term{t(opEx), t(opNotIn, "a")}, []string{"b", "c", "4", "5", "6", "7", "10", "06", "x1"}, true, nil, false},
		{"Gt is exclusive and numeric", []term{t(opGt, "5")}, []string{"6", "7", "10", "06"}, true, nil, false},
		{"Lt is exclusive", []term{t(opLt, "6")}, []string{"4", "5"}, true, nil, false},
		{"Gte is inclusive", []term{t(opGte, "6")}, []string{"6", "7", "10", "06"}, true, nil, false},
		{"Lte is inclusive", []term{t(opLte, "5")}, []string{"4", "5"}, true, nil, false},
		{"Gt ∩ Lt pinches to one value", []term{t(opGt, "5"), t(opLt, "7")}, []string{"6", "06"}, true, nil, false},
		{"Gt ∩ Lt with no integer between", []term{t(opGt, "5"), t(opLt, "6")}, nil, false, nil, false},
		{"Gte ∩ Lte equal", []term{t(opGte, "5"), t(opLte, "5")}, []string{"5"}, true, nil, false},
		{"Gt ∩ Lt ∩ NotIn the only value", []term{t(opGt, "5"), t(opLt, "7"), t(opNotIn, "6", "06")}, nil, false, nil, false},
		{"NotIn a non-canonical spelling leaves the value", []term{t(opGt, "5"), t(opLt, "7"), t(opNotIn, "06")}, []string{"6"}, true, nil, false},
		{"In ∩ Gt filters values", []term{t(opIn, "4", "6", "10", "a"), t(opGt, "5")}, []string{"6", "10"}, true, []string{"10", "6"}, true},
		{"In ∩ Lte ∩ Gte", []term{t(opIn, "4", "5", "6", "7"), t(opGte, "5"), t(opLte, "6")}, []string{"5", "6"}, true, []string{"5", "6"}, true},
		{"In non-numeric ∩ Lt", []term{t(opIn, "a", "b"), t(opLt, "100")}, nil, false, []string{}, true},
		{"Gt malformed matches nothing", []term{t(opGt, "five")}, nil, false, []string{}, true},
		{"Gt with two values matches nothing", []term{t(opGt, "1", "2")}, nil, false, []string{}, true},
		{"unknown operator matches nothing", []term{t("Near", "a")}, nil, false, []string{}, true},
		{"NotIn ∩ Gt rejects absent", []term{t(opNotIn, "7"), t(opGt, "5")}, []string{"6", "10", "06"}, true, nil, false},
		{"Gt ∩ Gt keeps the tighter", []term{t(opGt, "4"), t(opGt, "6")}, []string{"7", "10"}, true, nil, false},
	}
	for _, tc := range cases {
		t_.Run(tc.name, func(tt *testing.T) {
			var r *Requirement
			for _, tm := range tc.terms {
				next := NewRequirement("k", tm.op, tm.values...)
				if r == nil {
					r = next
				} else {
					r = r.Intersect(next)
				}
			}
			want := map[string]bool{}
			for _, v := range tc.admits {
				want[v] = true
			}
			for _, v := range probes {
				got := r.Matches(v, v != absent)
				if got != want[v] {
					tt.Errorf("%s: Matches(%q) = %v, want %v", r, v, got, want[v])
				}
				// The intersection admits exactly what every term admits.
				all := true
				for _, tm := range tc.terms {
					all = all && NewRequirement("k", tm.op, tm.values...).Matches(v, v != absent)
				}
				if all != got {
					tt.Errorf("%s: Matches(%q) = %v but the terms together say %v", r, v, got, all)
				}
			}
			if got := r.Satisfiable(); got != tc.satisfiable {
				tt.Errorf("%s: Satisfiable() = %v, want %v", r, got, tc.satisfiable)
			}
			if r.Finite() != tc.finite {
				tt.Errorf("%s: Finite() = %v, want %v", r, r.Finite(), tc.finite)
			}
			if tc.finite && !reflect.DeepEqual(r.Values(), tc.values) {
				tt.Errorf("%s: Values() = %q, want %q", r, r.Values(), tc.values)
			}
			// Intersection is commutative in what it admits.
			if len(tc.terms) == 2 {
				a := NewRequirement("k", tc.terms[0].op, tc.terms[0].values...)
				b := NewRequirement("k", tc.terms[1].op, tc.terms[1].values...)
				ba := b.Intersect(a)
				for _, v := range probes {
					if ba.Matches(v, v != absent) != r.Matches(v, v != absent) {
						tt.Errorf("b∩a and a∩b differ on %q", v)
					}
				}
			}
		})
	}
}

// TestRequirementsCompatible: rs is what a pool or node offers (a key it
// does not mention is a label the node will not carry), o what a pod asks.
func TestRequirementsCompatible(t_ *testing.T) {
	zone := corev1.LabelTopologyZone
	cases := []struct {
		name   string
		offers Requirements
		asks   Requirements
		ok     bool
	}{
		{"nothing asked", NewRequirements(NewRequirement(zone, opIn, "a")), nil, true},
		{"asked value offered", NewRequirements(NewRequirement(zone, opIn, "a", "b")), NewRequirements(NewRequirement(zone, opIn, "b")), true},
		{"asked value not offered", NewRequirements(NewRequirement(zone, opIn, "a")), NewRequirements(NewRequirement(zone, opIn, "b")), false},
		{"In on a label the node lacks", Requirements{}, NewRequirements(NewRequirement("team", opIn, "x")), false},
		{"Exists on a label the node lacks", Requirements{}, NewRequirements(NewRequirement("team", opEx)), false},
		{"NotIn on a label the node lacks", Requirements{}, NewRequirements(NewRequirement("team", opNotIn, "x")), true},
		{"DoesNotExist on a label the node lacks", Requirements{}, NewRequirements(NewRequirement("team", opDNE)), true},
		{"DoesNotExist on a label the node carries", NewRequirements(NewRequirement("team", opIn, "x")), NewRequirements(NewRequirement("team", opDNE)), false},
		{"Gt within an offered range", NewRequirements(NewRequirement("cpu", opIn, "2", "4", "8")), NewRequirements(NewRequirement("cpu", opGt, "4")), true},
		{"Gt beyond every offered value", NewRequirements(NewRequirement("cpu", opIn, "2", "4")), NewRequirements(NewRequirement("cpu", opGt, "4")), false},
		{"NotIn every offered value", NewRequirements(NewRequirement(zone, opIn, "a", "b")), NewRequirements(NewRequirement(zone, opNotIn, "a", "b")), false},
		{"second key conflicts", NewRequirements(NewRequirement(zone, opIn, "a"), NewRequirement("arch", opIn, "arm64")), NewRequirements(NewRequirement(zone, opIn, "a"), NewRequirement("arch", opIn, "amd64")), false},
	}
	for _, tc := range cases {
		t_.Run(tc.name, func(tt *testing.T) {
			err := tc.offers.Compatible(tc.asks)
			if (err == nil) != tc.ok {
				tt.Errorf("Compatible = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestRequirementsMinValuesAndRendering(t_ *testing.T) {
	two, three := 2, 3
	pool := FromAPI([]nsv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: opIn, Values: []string{"m.1x", "m.2x", "m.4x"}, MinValues: &two},
		{Key: "cpu", Operator: opGte, Values: []string{"2"}},
	})
	any := NewRequirement(corev1.LabelInstanceTypeStable, opEx)
	any.MinValues = &three
	pod := NewRequirements(any)
	got := pool.Intersect(pod)
	it := got.Get(corev1.LabelInstanceTypeStable)
	if it.MinValues == nil || *it.MinValues != 3 {
		t_.Errorf("intersection minValues = %v, want the larger, 3", it.MinValues)
	}
	if !reflect.DeepEqual(it.Values(), []string{"m.1x", "m.2x", "m.4x"}) {
		t_.Errorf("values %v", it.Values())
	}
	if pool.Get(corev1.LabelInstanceTypeStable).MinValues == nil || *pool.Get(corev1.LabelInstanceTypeStable).MinValues != 2 {
		t_.Error("Intersect modified its receiver's minValues")
	}
	rendered := got.NodeSelectorRequirements()
	want := []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: "cpu", Operator: opGt, Values: []string{"1"}},
		{Key: corev1.LabelInstanceTypeStable, Operator: opIn, Values: []string{"m.1x", "m.2x", "m.4x"}, MinValues: &three},
	}
	if !reflect.DeepEqual(rendered, want) {
		t_.Errorf("rendered %+v, want %+v", rendered, want)
	}
	// Rendering then parsing again admits the same labels.
	back := FromAPI(rendered)
	for _, lbls := range []map[string]string{
		{"cpu": "2", corev1.LabelInstanceTypeStable: "m.2x"},
		{"cpu": "1", corev1.LabelInstanceTypeStable: "m.2x"},
		{"cpu": "4", corev1.LabelInstanceTypeStable: "m.8x"},
		{corev1.LabelInstanceTypeStable: "m.1x"},
	} {
		if back.Matches(lbls) != got.Matches(lbls) {
			t_.Errorf("round trip differs on %v", lbls)
		}
	}
}
