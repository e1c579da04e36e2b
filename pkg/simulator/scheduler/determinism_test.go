package scheduler

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// runQueued drives the pods through the queue as the simulator would: pop,
// schedule, bind or fail, and on a bind signal a cluster event; when the
// queue is idle, step the clock to its next time.
func runQueued(s *Scheduler, pods []*corev1.Pod) []string {
	clk := clocktesting.NewFakeClock(t0)
	q := NewQueue(clk)
	index := map[string]int{}
	for i, p := range pods {
		q.Add(p)
		index[p.Name] = i
	}
	out := make([]string, len(pods))
	for steps := 0; steps < 10*len(pods); steps++ {
		p, ok := q.Pop()
		if !ok {
			next, ok := q.NextTime()
			if !ok {
				break
			}
			clk.SetTime(next)
			continue
		}
		node, err := s.Schedule(p)
		if err != nil {
			q.Failed(p)
			continue
		}
		b := bound(p, node)
		s.UpsertPod(b)
		q.Delete(b)
		out[index[p.Name]] = node
		q.MoveAll() // a bound pod may satisfy others' affinity
		clk.Step(time.Millisecond)
	}
	return out
}

// Two runs over the same inputs place every pod on the same node, though
// Go randomizes map iteration differently in each.
func TestDeterministic(t *testing.T) {
	pods := genPods(1000, 7)
	run := func(queued bool) []string {
		s := cluster(genNodes(120), dbPods()...)
		if queued {
			return runQueued(s, pods)
		}
		return runDirect(s, pods)
	}
	for _, queued := range []bool{false, true} {
		first := run(queued)
		placed := 0
		for _, n := range first {
			if n != "" {
				placed++
			}
		}
		// The workload is built to mostly fit; a run that places nothing
		// would compare equal trivially.
		if placed < len(pods)*9/10 {
			t.Fatalf("queued=%v: only %d of %d pods placed", queued, placed, len(pods))
		}
		for i := 0; i < 2; i++ {
			if again := run(queued); !slices.Equal(first, again) {
				t.Fatalf("queued=%v: run %d placed pods differently", queued, i+2)
			}
		}
	}
}

// The rules hold in the placements: no two pods of an anti-affinity group
// share a node, and zone spreading stays within maxSkew 1 while every zone
// has room.
func TestWorkloadRulesHold(t *testing.T) {
	pods := genPods(1500, 11)
	s := cluster(genNodes(120), dbPods()...)
	placed := runDirect(s, pods)
	antiHosts := map[string]map[string]bool{}
	spreadZones := map[string]map[string]int{}
	zoneOf := map[string]string{}
	for _, n := range genNodes(120) {
		zoneOf[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	for i, p := range pods {
		node := placed[i]
		if node == "" {
			continue
		}
		app := p.Labels["app"]
		switch {
		case p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil:
			if antiHosts[app] == nil {
				antiHosts[app] = map[string]bool{}
			}
			if antiHosts[app][node] {
				t.Fatalf("%s: two %s pods on %s", p.Name, app, node)
			}
			antiHosts[app][node] = true
		case len(p.Spec.TopologySpreadConstraints) > 0:
			if spreadZones[app] == nil {
				spreadZones[app] = map[string]int{}
			}
			spreadZones[app][zoneOf[node]]++
		}
	}
	for app, byZone := range spreadZones {
		lo, hi := 1<<30, 0
		for _, z := range zones {
			lo, hi = min(lo, byZone[z]), max(hi, byZone[z])
		}
		if hi-lo > 1 {
			t.Errorf("%s spread %v: skew %d", app, byZone, hi-lo)
		}
	}
}
