package scheduler

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// podCounter counts, per node, the bound pods that match every clause: the
// pods an incoming pod's affinity term or spread constraint selects. The
// real plugins recount them over all nodes in every PreFilter/PreScore; we
// count once when a rule is first seen and then keep the count as pods are
// bound and removed, so a pod with affinity or spread costs O(nodes), not
// O(pods).
type podCounter struct {
	clauses []clause
	// skipTerminating drops pods with a deletionTimestamp, as PodTopologySpread
	// does (inter-pod affinity counts them).
	skipTerminating bool
	perNode         nodeCounts
	lastUsed        uint64 // scheduling cycle that last asked for it
}

func (c *podCounter) matches(p *corev1.Pod, nsLabels labels.Set) bool {
	if c.skipTerminating && p.DeletionTimestamp != nil {
		return false
	}
	for i := range c.clauses {
		if !c.clauses[i].matches(p, nsLabels) {
			return false
		}
	}
	return true
}

// counterIndex finds counters by an equality requirement (anchor) so that a
// pod being bound is tested only against counters it could match.
type counterIndex struct {
	bySig      map[string]*podCounter
	anchored   map[string][]*podCounter
	unanchored []*podCounter
}

func newCounterIndex() counterIndex {
	return counterIndex{bySig: map[string]*podCounter{}, anchored: map[string][]*podCounter{}}
}

// counter returns the counter for the conjunction of clauses, creating and
// filling it from the bound pods on first use. It returns nil for a rule
// that matches no pod at all.
func (s *Scheduler) counter(clauses []clause, skipTerminating bool) *podCounter {
	sigs := make([]string, 0, len(clauses)+1)
	for i := range clauses {
		if clauses[i].matchesNothing() {
			return nil
		}
		sigs = append(sigs, clauses[i].sig)
	}
	if skipTerminating {
		sigs = append(sigs, "\x00live")
	}
	sig := strings.Join(sigs, "&")
	if c, ok := s.counters.bySig[sig]; ok {
		c.lastUsed = s.cycles
		return c
	}
	c := &podCounter{clauses: clauses, skipTerminating: skipTerminating, lastUsed: s.cycles}
	s.counters.bySig[sig] = c
	anchored := false
	for i := range clauses {
		if a, ok := clauses[i].anchor(); ok {
			s.counters.anchored[a] = append(s.counters.anchored[a], c)
			anchored = true
			break
		}
	}
	if !anchored {
		s.counters.unanchored = append(s.counters.unanchored, c)
	}
	for _, bp := range s.pods {
		if c.matches(bp.pod, s.nsLabels(bp.pod.Namespace)) {
			c.perNode.add(bp.nodeID, 1)
			bp.counted = append(bp.counted, c)
		}
	}
	return c
}

// countPod adds a newly bound pod to every counter that selects it.
func (s *Scheduler) countPod(bp *boundPod) {
	nsl := s.nsLabels(bp.pod.Namespace)
	visit := func(c *podCounter) {
		if c.matches(bp.pod, nsl) {
			c.perNode.add(bp.nodeID, 1)
			bp.counted = append(bp.counted, c)
		}
	}
	for k, v := range bp.pod.Labels {
		for _, c := range s.counters.anchored[k+"="+v] {
			visit(c)
		}
	}
	for _, c := range s.counters.unanchored {
		visit(c)
	}
}

func (s *Scheduler) uncountPod(bp *boundPod) {
	for _, c := range bp.counted {
		c.perNode.add(bp.nodeID, -1)
	}
	bp.counted = nil
}

// counterIdleCycles is how many scheduling cycles a counter may go unused
// before it is dropped: rules of finished or rolled-out workloads would
// otherwise be kept up to date forever.
const counterIdleCycles = 2048

// sweepCounters drops idle counters. Pods still list them in counted and
// decrement them when removed, which is harmless; a rule seen again gets a
// fresh counter.
func (s *Scheduler) sweepCounters() {
	keep := func(c *podCounter) bool { return s.cycles-c.lastUsed <= counterIdleCycles }
	for sig, c := range s.counters.bySig {
		if !keep(c) {
			delete(s.counters.bySig, sig)
		}
	}
	for a, cs := range s.counters.anchored {
		cs = slices.DeleteFunc(cs, func(c *podCounter) bool { return !keep(c) })
		if len(cs) == 0 {
			delete(s.counters.anchored, a)
			continue
		}
		s.counters.anchored[a] = cs
	}
	s.counters.unanchored = slices.DeleteFunc(s.counters.unanchored, func(c *podCounter) bool { return !keep(c) })
}

// resetCounters forgets every counter (their counts depend on namespace
// labels, which just changed); they are rebuilt on next use.
func (s *Scheduler) resetCounters() {
	s.counters = newCounterIndex()
	for _, bp := range s.pods {
		bp.counted = nil
	}
}
