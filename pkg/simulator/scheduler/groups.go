package scheduler

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// termKind says what a bound pod's affinity term does to incoming pods.
type termKind uint8

const (
	// requiredAnti terms keep matching pods out of the term's topology domain
	// (InterPodAffinity Filter, "existing pods anti-affinity").
	requiredAnti termKind = iota
	// The other kinds only score: a required affinity term counts with the
	// hard pod affinity weight (1 by default), preferred terms with their
	// weight, anti-affinity negatively.
	requiredAffinity
	preferredAffinity
	preferredAnti
)

// hardPodAffinityWeight is InterPodAffinityArgs.HardPodAffinityWeight's
// default.
const hardPodAffinityWeight = 1

// termGroup gathers identical affinity terms carried by bound pods (the
// replicas of one workload share them) and counts their carriers per node,
// so an incoming pod tests each distinct term once instead of every pod.
type termGroup struct {
	sig     string
	kind    termKind
	weight  int64 // signed score contribution per carrier; unused for requiredAnti
	clause  clause
	topoKey string
	perNode nodeCounts
	total   int
}

// groupTerms registers the affinity terms of a newly bound pod.
func (s *Scheduler) groupTerms(bp *boundPod) {
	a := bp.pod.Spec.Affinity
	if a == nil {
		return
	}
	add := func(kind termKind, weight int64, t *corev1.PodAffinityTerm) {
		c := termClause(bp.pod, t)
		if c.matchesNothing() {
			return
		}
		sig := strconv.Itoa(int(kind)) + "|" + strconv.FormatInt(weight, 10) + "|" + t.TopologyKey + "|" + c.sig
		g, ok := s.groups[sig]
		if !ok {
			g = &termGroup{sig: sig, kind: kind, weight: weight, clause: c, topoKey: t.TopologyKey}
			s.groups[sig] = g
			s.groupsByKind[kind] = append(s.groupsByKind[kind], g)
		}
		g.perNode.add(bp.nodeID, 1)
		g.total++
		bp.groups = append(bp.groups, g)
	}
	if pa := a.PodAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			add(requiredAffinity, hardPodAffinityWeight, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[i]
			add(preferredAffinity, int64(w.Weight), &w.PodAffinityTerm)
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			add(requiredAnti, 0, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[i]
			add(preferredAnti, -int64(w.Weight), &w.PodAffinityTerm)
		}
	}
}

func (s *Scheduler) ungroupTerms(bp *boundPod) {
	for _, g := range bp.groups {
		g.perNode.add(bp.nodeID, -1)
		g.total--
	}
	bp.groups = nil
}

// liveGroups returns the groups of a kind that still have carriers,
// dropping empty ones so the list stays as short as the live workloads.
func (s *Scheduler) liveGroups(kind termKind) []*termGroup {
	gs := s.groupsByKind[kind]
	live := gs[:0]
	for _, g := range gs {
		if g.total > 0 {
			live = append(live, g)
			continue
		}
		delete(s.groups, g.sig)
	}
	s.groupsByKind[kind] = live
	return live
}
