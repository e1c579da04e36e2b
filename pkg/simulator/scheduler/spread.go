package scheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// spreadFilter is PodTopologySpread's PreFilter state: per DoNotSchedule
// constraint, the matching pods in each eligible domain and the global
// minimum the skew is measured against.
type spreadFilter struct {
	constraints []spreadConstraint
	doms        []*domainIndex
	counts      [][]int // by constraint, by domain value
	minMatch    []int
	self        []bool
}

func (s *Scheduler) newSpreadFilter(pi *podInfo) *spreadFilter {
	cs, _ := s.spreadConstraints(pi.pod, corev1.DoNotSchedule)
	if len(cs) == 0 {
		return nil
	}
	f := &spreadFilter{constraints: cs, doms: s.domainsOf(cs), counts: make([][]int, len(cs)), minMatch: make([]int, len(cs)), self: make([]bool, len(cs))}
	eligible := make([][]bool, len(cs))
	for i := range cs {
		f.counts[i] = make([]int, len(f.doms[i].values))
		eligible[i] = make([]bool, len(f.doms[i].values))
		f.self[i] = cs[i].selector.Matches(labels.Set(pi.pod.Labels))
	}
	// A node is a domain member only if it has every constraint's key and
	// passes the constraint's inclusion policies.
	for _, ni := range s.nodeList() {
		if !hasAllKeys(ni, f.doms) {
			continue
		}
		for i := range cs {
			if !pi.includes(&cs[i], ni) {
				continue
			}
			j := f.doms[i].at(ni.id)
			f.counts[i][j] += cs[i].count(ni)
			eligible[i][j] = true
		}
	}
	for i := range cs {
		minimum, domains := math.MaxInt32, 0
		for j, n := range f.counts[i] {
			if eligible[i][j] {
				minimum = min(minimum, n)
				domains++
			}
		}
		if domains < int(cs[i].minDomains) {
			// Fewer eligible domains than minDomains: the global minimum is 0.
			minimum = 0
		}
		f.minMatch[i] = minimum
	}
	return f
}

// filter returns the rejection reason for the node, "" when it passes.
func (f *spreadFilter) filter(ni *nodeInfo) string {
	for i := range f.constraints {
		j := f.doms[i].at(ni.id)
		if j < 0 {
			return reasonSpreadLabel
		}
		self := 0
		if f.self[i] {
			self = 1
		}
		if f.counts[i][j]+self-f.minMatch[i] > int(f.constraints[i].maxSkew) {
			return reasonSpread
		}
	}
	return ""
}

// spreadScores is PodTopologySpread's PreScore, Score and NormalizeScore for
// the ScheduleAnyway constraints (the pod's own, else the system defaults).
// It returns nil when the plugin skips the pod.
func (s *Scheduler) spreadScores(pi *podInfo, feasible []*nodeInfo) []int64 {
	cs, systemDefault := s.spreadConstraints(pi.pod, corev1.ScheduleAnyway)
	if len(cs) == 0 {
		return nil
	}
	doms := s.domainsOf(cs)
	// Only the pod's own constraints require nodes to carry every key; with
	// the defaults a node without a zone label still spreads by hostname.
	requireAll := !systemDefault
	ignored := make([]bool, len(feasible))
	nIgnored := 0
	// Domains of non-hostname keys, one slot more for nodes without the key
	// (upstream files them under the value "").
	counts := make([][]int64, len(cs))
	present := make([][]bool, len(cs))
	for i := range cs {
		counts[i] = make([]int64, len(doms[i].values)+1)
		present[i] = make([]bool, len(doms[i].values)+1)
	}
	for j, ni := range feasible {
		if requireAll && !hasAllKeys(ni, doms) {
			ignored[j] = true
			nIgnored++
			continue
		}
		for i := range cs {
			if cs[i].key != corev1.LabelHostname {
				present[i][doms[i].orEmpty(doms[i].at(ni.id))] = true
			}
		}
	}
	weights := make([]float64, len(cs))
	for i := range cs {
		size := 0
		for _, p := range present[i] {
			if p {
				size++
			}
		}
		if cs[i].key == corev1.LabelHostname {
			size = len(feasible) - nIgnored
		}
		weights[i] = math.Log(float64(size + 2))
	}
	for _, ni := range s.nodeList() {
		if requireAll && !hasAllKeys(ni, doms) {
			continue
		}
		for i := range cs {
			if cs[i].key == corev1.LabelHostname {
				continue
			}
			if v := doms[i].orEmpty(doms[i].at(ni.id)); present[i][v] && pi.includes(&cs[i], ni) {
				counts[i][v] += int64(cs[i].count(ni))
			}
		}
	}
	scores := make([]int64, len(feasible))
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for j, ni := range feasible {
		if ignored[j] {
			continue
		}
		var sum float64
		for i := range cs {
			v := doms[i].at(ni.id)
			if v < 0 {
				continue
			}
			cnt := counts[i][v]
			if cs[i].key == corev1.LabelHostname {
				cnt = int64(cs[i].count(ni))
			}
			sum += float64(cnt)*weights[i] + float64(cs[i].maxSkew-1)
		}
		scores[j] = int64(math.Round(sum))
		minScore = min(minScore, scores[j])
		maxScore = max(maxScore, scores[j])
	}
	for j := range scores {
		switch {
		case ignored[j]:
			scores[j] = 0
		case maxScore == 0:
			scores[j] = maxNodeScore
		default:
			scores[j] = maxNodeScore * (maxScore + minScore - scores[j]) / maxScore
		}
	}
	return scores
}
