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

// topoCounts maps topology key → value → count.
type topoCounts map[string]map[string]int64

func (m topoCounts) add(key, value string, n int64) {
	vs := m[key]
	if vs == nil {
		vs = map[string]int64{}
		m[key] = vs
	}
	vs[value] += n
}

// addPerNode adds n times each node's count to the node's domain for key,
// skipping nodes the snapshot does not have and nodes without the key.
func (s *Scheduler) addPerNode(m topoCounts, key string, perNode map[string]int, n int64) {
	for name, c := range perNode {
		ni := s.nodes[name]
		if ni == nil || ni.node == nil {
			continue
		}
		if v, ok := ni.node.Labels[key]; ok {
			m.add(key, v, int64(c)*n)
		}
	}
}

// affinityFilter is InterPodAffinity's PreFilter state.
type affinityFilter struct {
	affinityKeys []string
	affinity     topoCounts // pods matching all required affinity terms
	selfMatch    bool       // the pod matches its own affinity terms
	antiKeys     []string
	anti         topoCounts // pods matching a required anti-affinity term
	existing     topoCounts // bound pods whose required anti-affinity matches the pod
}

func (s *Scheduler) newAffinityFilter(pi *podInfo) *affinityFilter {
	p := pi.pod
	f := &affinityFilter{affinity: topoCounts{}, anti: topoCounts{}, existing: topoCounts{}}
	nsl := s.nsLabels(p.Namespace)
	for _, g := range s.liveGroups(requiredAnti) {
		if g.clause.matches(p, nsl) {
			s.addPerNode(f.existing, g.topoKey, g.perNode, 1)
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
	if len(req) == 0 && len(reqAnti) == 0 && len(f.existing) == 0 {
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
				s.addPerNode(f.affinity, t.topoKey, c.perNode, 1)
			}
		}
	}
	for _, t := range reqAnti {
		f.antiKeys = append(f.antiKeys, t.topoKey)
		if c := s.counter([]clause{t.clause}, false); c != nil {
			s.addPerNode(f.anti, t.topoKey, c.perNode, 1)
		}
	}
	return f
}

// filter returns the rejection reason for the node, "" when it passes.
func (f *affinityFilter) filter(ni *nodeInfo) string {
	l := ni.node.Labels
	if len(f.affinityKeys) > 0 {
		podsExist := true
		for _, k := range f.affinityKeys {
			v, ok := l[k]
			if !ok {
				return reasonAffinity
			}
			if f.affinity[k][v] <= 0 {
				podsExist = false
			}
		}
		// The first pod of a group with affinity to itself may go anywhere
		// the topology keys exist, as long as no pod anywhere matches yet.
		if !podsExist && !(len(f.affinity) == 0 && f.selfMatch) {
			return reasonAffinity
		}
	}
	for _, k := range f.antiKeys {
		if v, ok := l[k]; ok && f.anti[k][v] > 0 {
			return reasonAntiAffinity
		}
	}
	for k, vs := range f.existing {
		if v, ok := l[k]; ok && vs[v] > 0 {
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
	topo := topoCounts{}
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
			s.addPerNode(topo, t.topoKey, c.perNode, t.weight)
		}
	}
	nsl := s.nsLabels(p.Namespace)
	for _, kind := range []termKind{requiredAffinity, preferredAffinity, preferredAnti} {
		for _, g := range s.liveGroups(kind) {
			if g.clause.matches(p, nsl) {
				s.addPerNode(topo, g.topoKey, g.perNode, g.weight)
			}
		}
	}
	if len(topo) == 0 {
		return nil
	}
	scores := make([]int64, len(feasible))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for j, ni := range feasible {
		var sc int64
		for k, vs := range topo {
			if v, ok := ni.node.Labels[k]; ok {
				sc += vs[v]
			}
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
