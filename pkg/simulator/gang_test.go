package simulator

import (
	"strings"
	"testing"
	"time"
)

// gang-atomic.yaml against gang-atomic-no-capacity.yaml: a gang of 64
// pods behind a best-effort-atomic-scale-up ProvisioningRequest either
// starts whole or not at all.
func TestGangAtomic(t *testing.T) {
	res := runCached(t, "gang-atomic.yaml")
	if len(res.PodStarts) != 64 {
		t.Fatalf("%d pods of the gang reached Running, want 64", len(res.PodStarts))
	}
	first, last := res.PodStarts[0].Running, res.PodStarts[0].Running
	for _, p := range res.PodStarts {
		first, last = min(first, p.Running), max(last, p.Running)
		if p.Created < time.Minute {
			t.Errorf("pod %s created at %s, before the request was even made", p.Pod, p.Created)
		}
	}
	t.Logf("gang of 64: request at 1m, first pod Running at %s, last at %s, %d instances", first, last, len(res.Launches))
	if last-first > 5*time.Second {
		t.Errorf("the gang started over %s (%s to %s), want together", last-first, first, last)
	}
	if len(res.Launches) != 64 {
		t.Errorf("%d instances launched, want 64 (one per pod)", len(res.Launches))
	}

	none := runCached(t, "gang-atomic-no-capacity.yaml")
	if none.PodsCreated != 0 || len(none.PodStarts) != 0 {
		t.Errorf("%d pods created, %d Running: a gang without room for all must start none", none.PodsCreated, len(none.PodStarts))
	}
	if len(none.Launches) == 0 {
		t.Fatal("nothing launched: the run shows no rollback")
	}
	for _, l := range none.Launches {
		if !l.Terminated || l.TerminatedAt > 2*time.Minute {
			t.Errorf("instance of %s kept (terminated %v at %s), want the partial set rolled back", l.NodeClaim, l.Terminated, l.TerminatedAt)
		}
	}
	if !none.BackToBase.Reached {
		t.Error("nodes left at the end")
	}
	failed := false
	for _, n := range none.Notes {
		failed = failed || strings.Contains(n, "not admitted") && strings.Contains(n, "LaunchFailed")
	}
	if !failed {
		t.Errorf("no note of the request failing with LaunchFailed in %d notes", len(none.Notes))
	}
	t.Logf("without room: %d instances launched and rolled back, back to base at %s", len(none.Launches), none.BackToBase.At)
}
