package simulator

import (
	"testing"
	"time"
)

// static-pool.yaml: the static pool's node count follows replicas (3, then
// 4 held by limits.nodes, then 2) whatever the pods, never exceeds
// limits.nodes, loses no node to consolidation, and its drift replaces
// the three nodes one after another, each replacement launched before its
// node goes.
func TestStaticPool(t *testing.T) {
	res := runCached(t, "static-pool.yaml")
	at := func(d time.Duration) int {
		n := -1
		for _, s := range res.Samples {
			if s.T <= d {
				n = s.NodesOnDemand + s.NodesSpot
			}
		}
		return n
	}
	for _, c := range []struct {
		t    time.Duration
		want int
	}{{10 * time.Second, 3}, {3 * time.Minute, 3}, {12 * time.Minute, 3}, {16 * time.Minute, 4}, {19 * time.Minute, 2}, {23 * time.Minute, 2}} {
		if got := at(c.t); got != c.want {
			t.Errorf("nodes at %s: %d, want %d", c.t, got, c.want)
		}
	}
	for _, s := range res.Samples {
		if n := s.NodesOnDemand + s.NodesSpot; n > 4 {
			t.Errorf("%d nodes at %s, over limits.nodes 4", n, s.T)
		}
	}
	var drifted []time.Duration
	for _, l := range res.Launches {
		switch l.Reason {
		case "drifted":
			drifted = append(drifted, l.TerminatedAt)
		case "", "deleted":
		default:
			t.Errorf("%s went away at %s: %s; a static node only goes by drift, scale-down or deletion", l.NodeClaim, l.TerminatedAt, l.Reason)
		}
	}
	if len(drifted) != 3 {
		t.Fatalf("%d drifted nodes, want 3", len(drifted))
	}
	// One at a time: each drifted node went after the previous one, and
	// at least a replacement's boot apart.
	for i := 1; i < len(drifted); i++ {
		if drifted[i]-drifted[i-1] < 40*time.Second {
			t.Errorf("drifted nodes went at %s and %s: not one at a time", drifted[i-1], drifted[i])
		}
	}
	if end := res.Samples[len(res.Samples)-1]; end.RunningPods != 2 || end.PendingPods != 0 {
		t.Errorf("at the end %d pods running, %d pending; want 2 and 0", end.RunningPods, end.PendingPods)
	}
}
