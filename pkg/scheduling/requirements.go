package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Requirements is a conjunction of per-key requirements. The zero value (nil)
// admits every node. Requirements are values: methods never modify their
// receiver's Requirement pointers, they replace them.
type Requirements map[string]*Requirement

// NewRequirements intersects the given requirements by key.
func NewRequirements(reqs ...*Requirement) Requirements {
	out := make(Requirements, len(reqs))
	for _, r := range reqs {
		out.Add(r)
	}
	return out
}

// FromAPI converts NodePool/NodeClaim requirements, minValues included.
func FromAPI(reqs []nsv1.NodeSelectorRequirementWithMinValues) Requirements {
	out := make(Requirements, len(reqs))
	for _, r := range reqs {
		req := NewRequirement(r.Key, r.Operator, r.Values...)
		if r.MinValues != nil {
			mv := *r.MinValues
			req.MinValues = &mv
		}
		out.Add(req)
	}
	return out
}

// FromNodeSelectorRequirements converts one node selector term's expressions.
func FromNodeSelectorRequirements(reqs []corev1.NodeSelectorRequirement) Requirements {
	out := make(Requirements, len(reqs))
	for _, r := range reqs {
		out.Add(NewRequirement(r.Key, r.Operator, r.Values...))
	}
	return out
}

// FromLabels turns a label set into key In [value] requirements.
func FromLabels(labels map[string]string) Requirements {
	out := make(Requirements, len(labels))
	for k, v := range labels {
		out.Add(NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	return out
}

// PodRequirements returns the alternatives a pod's node selector and
// required node affinity allow: one Requirements per OR-ed node selector
// term (each already intersected with the nodeSelector), or a single entry
// when the pod has no required terms. Field selectors (matchFields) are not
// label requirements and are ignored here; kube-scheduler still applies them.
func PodRequirements(pod *corev1.Pod) []Requirements {
	base := FromLabels(pod.Spec.NodeSelector)
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return []Requirements{base}
	}
	terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	out := make([]Requirements, 0, len(terms))
	for _, t := range terms {
		r := base.Clone()
		r.AddAll(FromNodeSelectorRequirements(t.MatchExpressions))
		out = append(out, r)
	}
	if len(out) == 0 {
		// An empty term list matches no node (kube-scheduler semantics).
		return []Requirements{NewRequirements(NewRequirement(corev1.LabelHostname, corev1.NodeSelectorOpIn))}
	}
	return out
}

// Clone returns a shallow copy (the Requirement values are immutable).
func (rs Requirements) Clone() Requirements {
	out := make(Requirements, len(rs))
	for k, v := range rs {
		out[k] = v
	}
	return out
}

// Add intersects r into the set.
func (rs Requirements) Add(r *Requirement) {
	if cur, ok := rs[r.Key]; ok {
		rs[r.Key] = cur.Intersect(r)
		return
	}
	rs[r.Key] = r
}

// AddAll intersects every requirement of o into the set.
func (rs Requirements) AddAll(o Requirements) {
	for _, k := range o.Keys() {
		rs.Add(o[k])
	}
}

// Get returns the requirement for key, or nil when unconstrained.
func (rs Requirements) Get(key string) *Requirement { return rs[key] }

// Keys returns the keys in sorted order (for deterministic iteration).
func (rs Requirements) Keys() []string {
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Intersect returns the requirements both sets impose.
func (rs Requirements) Intersect(o Requirements) Requirements {
	out := rs.Clone()
	out.AddAll(o)
	return out
}

// Compatible reports whether a node can satisfy both rs (what a NodePool or
// node offers, where a key rs does not mention means the node will not carry
// that label) and o (what a pod asks for). It returns nil or an error naming
// the first conflicting requirement in key order.
func (rs Requirements) Compatible(o Requirements) error {
	for _, k := range o.Keys() {
		want := o[k]
		have, ok := rs[k]
		if !ok {
			if !want.AllowsAbsent() {
				return fmt.Errorf("requirement %s: the node has no label %s", want, k)
			}
			continue
		}
		if !have.Intersect(want).Satisfiable() {
			return fmt.Errorf("requirement %s conflicts with %s", want, have)
		}
	}
	return nil
}

// Satisfiable reports whether every key still admits some node.
func (rs Requirements) Satisfiable() error {
	for _, k := range rs.Keys() {
		if !rs[k].Satisfiable() {
			return fmt.Errorf("requirement %s admits no value", rs[k])
		}
	}
	return nil
}

// Matches reports whether a concrete label set satisfies every requirement.
func (rs Requirements) Matches(labels map[string]string) bool {
	for k, r := range rs {
		v, ok := labels[k]
		if !r.Matches(v, ok) {
			return false
		}
	}
	return true
}

// NodeSelectorRequirements renders the set for a NodeClaim spec, sorted by key.
func (rs Requirements) NodeSelectorRequirements() []nsv1.NodeSelectorRequirementWithMinValues {
	var out []nsv1.NodeSelectorRequirementWithMinValues
	for _, k := range rs.Keys() {
		out = append(out, rs[k].selectorRequirements()...)
	}
	return out
}

// String renders the set for explanations.
func (rs Requirements) String() string {
	parts := make([]string, 0, len(rs))
	for _, k := range rs.Keys() {
		parts = append(parts, rs[k].String())
	}
	return strings.Join(parts, "; ")
}
