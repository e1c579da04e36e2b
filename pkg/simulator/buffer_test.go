package simulator

import (
	"testing"
	"time"

	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// burstLatency is the slowest time to Running of the pods created in
// [from, from+window).
func burstLatency(t *testing.T, res *output.Result, from time.Duration) time.Duration {
	t.Helper()
	var worst time.Duration
	n := 0
	for _, p := range res.PodStarts {
		if p.Created >= from && p.Created < from+time.Minute {
			worst = max(worst, p.Running-p.Created)
			n++
		}
	}
	if n != 10 {
		t.Fatalf("%d pods of the burst at %s reached Running, want 10", n, from)
	}
	return worst
}

// capacity-buffer.yaml against burst-no-buffer.yaml: the same burst of 10
// pods runs within 5 s on a buffer's warm room, and waits for a boot
// without it.
func TestCapacityBufferBurst(t *testing.T) {
	warm := burstLatency(t, runCached(t, "capacity-buffer.yaml"), 5*time.Minute)
	cold := burstLatency(t, runCached(t, "burst-no-buffer.yaml"), 5*time.Minute)
	t.Logf("burst of 10 to Running: %s with a 10-pod buffer, %s without", warm, cold)
	if warm >= 5*time.Second {
		t.Errorf("with the buffer the burst took %s to Running, want under 5s", warm)
	}
	if cold < 30*time.Second {
		t.Errorf("without a buffer the burst took %s, want at least a boot (bootDelay 40s): the comparison shows nothing", cold)
	}
	// The buffer's room is launched again behind the burst and kept after
	// it: the run ends with room for 10 chunks, not back to base.
	res := runCached(t, "capacity-buffer.yaml")
	if res.BackToBase.Reached {
		t.Error("the buffer's room went away")
	}
	behind := 0
	for _, l := range res.Launches {
		if l.LaunchedAt > 5*time.Minute && l.LaunchedAt < 6*time.Minute {
			behind++
		}
	}
	if behind == 0 {
		t.Error("no room launched behind the burst")
	}
}

// capacity-buffer-auto.yaml: the first burst waits for a boot (nothing
// had arrived); auto sizing then keeps room for 10 and the next bursts run
// within 5 s.
func TestCapacityBufferAuto(t *testing.T) {
	res := runCached(t, "capacity-buffer-auto.yaml")
	first := burstLatency(t, res, 5*time.Minute)
	second := burstLatency(t, res, 15*time.Minute)
	third := burstLatency(t, res, 25*time.Minute)
	t.Logf("auto buffer, bursts of 10 to Running: %s, %s, %s", first, second, third)
	if first < 30*time.Second {
		t.Errorf("first burst took %s: auto sizing kept room before anything arrived", first)
	}
	if second >= 5*time.Second || third >= 5*time.Second {
		t.Errorf("later bursts took %s and %s, want under 5s", second, third)
	}
}
