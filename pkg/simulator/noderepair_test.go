package simulator

import (
	"testing"
	"time"

	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// TestGoldenNodeRepair pins the node-repair example: one node of each pool
// goes NotReady at 3m. The web pod comes back on a node the provisioner
// launches after the node lifecycle controller evicts it (300 s); the cache
// pod, which tolerates the unreachable taint for an hour, comes back on
// the replacement node repair launches at 33m — not a second before the
// 30m toleration — whatever the zero budget and the PDB say. Both broken
// nodes are gone by then; nothing else is launched or removed.
func TestGoldenNodeRepair(t *testing.T) {
	const notReady, toleration = 3 * time.Minute, 30 * time.Minute
	res := runCached(t, "node-repair.yaml")
	var launched []output.Launch
	for _, l := range res.Launches {
		if l.LaunchedAt >= notReady {
			launched = append(launched, l)
		}
		if l.LaunchedAt < notReady && l.Terminated && (l.Reason != "deleted" || l.TerminatedAt < notReady+toleration) {
			t.Errorf("node %s went at %s (%s), want only the broken nodes, deleted by repair at %s or later",
				l.NodeClaim, output.FormatDuration(l.TerminatedAt), l.Reason, notReady+toleration)
		}
	}
	byPool := map[string][]time.Duration{}
	for _, l := range launched {
		byPool[l.Pool] = append(byPool[l.Pool], l.LaunchedAt)
	}
	if got := byPool["web"]; len(got) != 1 || got[0] < notReady+5*time.Minute || got[0] > notReady+5*time.Minute+10*time.Second {
		t.Errorf("web launches after the start at %v, want one just after the 300 s eviction (%s)", got, notReady+5*time.Minute)
	}
	if got := byPool["cache"]; len(got) != 1 || got[0] != notReady+toleration {
		t.Errorf("cache launches after the start at %v, want the repair's replacement at %s exactly", got, notReady+toleration)
	}
	// Pods running again: 5 of 6 once the web pod is back, 6 once the
	// cache pod is.
	back := func(running int) time.Duration {
		for _, s := range res.Samples {
			if s.T > notReady && s.RunningPods >= running {
				return s.T
			}
		}
		t.Fatalf("never %d pods running again after %s", running, notReady)
		return 0
	}
	if d := back(5) - notReady; d > 6*time.Minute {
		t.Errorf("the web pod ran again %s after NotReady, want within 6m (300 s eviction, a node boot)", d)
	}
	if d := back(6) - notReady; d < toleration || d > toleration+time.Minute {
		t.Errorf("every pod ran again %s after NotReady, want within a minute of the %s toleration", d, toleration)
	}
	t.Logf("web pod running again %s after NotReady, cache pod %s after", back(5)-notReady, back(6)-notReady)
}
