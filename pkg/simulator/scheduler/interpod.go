package scheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// incomingTerm is an affinity term of the pod being scheduled.
type incomingTerm struct {
	clause  clause
	topoKey string
	weight  int64 // signed, for preferred terms
}

func requiredTerms(p *corev1.Pod, terms []corev1.PodAffinityTerm) []incomingTerm {
	out := make([]incomingTerm, 0, len(terms))
	for i := range terms {
		out = append(out, incomingTerm{clause: termClause(p, &terms[i]), topoKey: terms[i].TopologyKey})
	}
	return out
}

func preferredTerms(p *corev1.Pod, terms []corev1.WeightedPodAffinityTerm, sign int64) []incomingTerm {
	out := make([]incomingTerm, 0, len(terms))
	for i := range terms {
		t := &terms[i].PodAffinityTerm
		out = append(out, incomingTerm{clause: termClause(p, t), topoKey: t.TopologyKey, weight: sign * int64(terms[i].Weight)})
	}
	return out
}

// affinityFilter is InterPodAffinity's PreFilter state.
type affinityFilter struct {
	affinityKeys []string
	affinity     topoSums // pods matching all required affinity terms
	noneMatch    bool     // no pod anywhere matches them (the first-pod rule may apply)
	selfMatch    bool     // the pod matches its own affinity terms
	antiKeys     []string
	anti         topoSums // pods matching a required anti-affinity term
	existing     topoSums // bound pods whose required anti-affinity matches the pod
}

func (s *Scheduler) newAffinityFilter(pi *podInfo) *affinityFilter {
	p := pi.pod
	f := &affinityFilter{affinity: topoSums{}, anti: topoSums{}, existing: topoSums{}}
	nsl := s.nsLabels(p.Namespace)
	for _, g := range s.liveGroups(requiredAnti) {
		if g.clause.matches(p, nsl) {
			s.addCounts(f.existing, g.topoKey, g.perNode, 1)
		}
	}
	var req, reqAnti []incomingTerm
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			req = requiredTerms(p, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		}
		if a.PodAntiAffinity != nil {
			reqAnti = requiredTerms(p, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		}
	}
	if len(req) == 0 && len(reqAnti) == 0 && f.existing.empty() {
		return nil
	}
	if len(req) > 0 {
		// A bound pod counts for affinity only if it matches every term.
		clauses := make([]clause, len(req))
		f.selfMatch = true
		for i, t := range req {
			clauses[i] = t.clause
			f.affinityKeys = append(f.affinityKeys, t.topoKey)
			f.selfMatch = f.selfMatch && t.clause.matches(p, nsl)
		}
		if c := s.counter(clauses, false); c != nil {
			for _, t := range req {
				s.addCounts(f.affinity, t.topoKey, c.perNode, 1)
			}
		}
	}
	f.noneMatch = f.affinity.empty()
	for _, t := range reqAnti {
		f.antiKeys = append(f.antiKeys, t.topoKey)
		if c := s.counter([]clause{t.clause}, false); c != nil {
			s.addCounts(f.anti, t.topoKey, c.perNode, 1)
		}
	}
	return f
}

// filter returns the rejection reason for the node, "" when it passes.
func (f *affinityFilter) filter(ni *nodeInfo) string {
	if len(f.affinityKeys) > 0 {
		podsExist := true
		for _, k := range f.affinityKeys {
			if _, ok := ni.node.Labels[k]; !ok {
				return reasonAffinity
			}
			if f.affinity.at(k, ni.id) <= 0 {
				podsExist = false
			}
		}
		// The first pod of a group with affinity to itself may go anywhere
		// the topology keys exist, as long as no pod anywhere matches yet.
		if !podsExist && !(f.noneMatch && f.selfMatch) {
			return reasonAffinity
		}
	}
	for _, k := range f.antiKeys {
		if f.anti.at(k, ni.id) > 0 {
			return reasonAntiAffinity
		}
	}
	for k := range f.existing {
		if f.existing.at(k, ni.id) > 0 {
			return reasonExistingAntiAffin
		}
	}
	return ""
}

// interPodScores is InterPodAffinity's PreScore, Score and NormalizeScore:
// the pod's preferred terms over bound pods, plus the required-affinity
// (hard weight) and preferred terms of bound pods that match the pod. It
// returns nil when the plugin skips the pod.
func (s *Scheduler) interPodScores(pi *podInfo, feasible []*nodeInfo) []int64 {
	p := pi.pod
	topo := topoSums{}
	var terms []incomingTerm
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			terms = append(terms, preferredTerms(p, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, 1)...)
		}
		if a.PodAntiAffinity != nil {
			terms = append(terms, preferredTerms(p, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, -1)...)
		}
	}
	for _, t := range terms {
		if c := s.counter([]clause{t.clause}, false); c != nil {
			s.addCounts(topo, t.topoKey, c.perNode, t.weight)
		}
	}
	nsl := s.nsLabels(p.Namespace)
	for _, kind := range []termKind{requiredAffinity, preferredAffinity, preferredAnti} {
		for _, g := range s.liveGroups(kind) {
			if g.clause.matches(p, nsl) {
				s.addCounts(topo, g.topoKey, g.perNode, g.weight)
			}
		}
	}
	if topo.empty() {
		return nil
	}
	scores := make([]int64, len(feasible))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for j, ni := range feasible {
		var sc int64
		for k := range topo {
			sc += topo.at(k, ni.id)
		}
		scores[j] = sc
		lo, hi = min(lo, sc), max(hi, sc)
	}
	for j := range scores {
		if hi > lo {
			// Same operation order as upstream, so truncation agrees.
			scores[j] = int64(float64(maxNodeScore) * (float64(scores[j]-lo) / float64(hi-lo)))
		} else {
			scores[j] = 0
		}
	}
	return scores
}
