package state

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestNominations(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewCluster(nil, clk, time.Minute)
	c.Nominate("a", "claim-1")
	c.Nominate("b", "claim-1")
	c.Nominate("c", "node-2")

	tests := []struct {
		name       string
		step       func()
		pod        types.UID
		wantTarget string
		wantOK     bool
		wantLive   bool // within its TTL
	}{
		{name: "nominated", pod: "a", wantTarget: "claim-1", wantOK: true, wantLive: true},
		{name: "unknown pod", pod: "z"},
		{name: "released with its target", step: func() {
			if got := c.ReleaseTarget("claim-1"); len(got) != 2 {
				t.Fatalf("ReleaseTarget released %v, want two pods", got)
			}
		}, pod: "a"},
		{name: "other target kept", pod: "c", wantTarget: "node-2", wantOK: true, wantLive: true},
		{name: "live until its TTL", step: func() {
			c.Nominate("d", "node-3")
			clk.Step(50 * time.Second)
		}, pod: "d", wantTarget: "node-3", wantOK: true, wantLive: true},
		// Past its TTL a nomination is still reported, expired: whether it
		// holds depends on its target (provisioning.PendingPods).
		{name: "expired", step: func() { clk.Step(time.Minute) }, pod: "c", wantTarget: "node-2", wantOK: true},
		{name: "expired too", pod: "d", wantTarget: "node-3", wantOK: true},
		{name: "forgotten", step: func() { c.Forget("d") }, pod: "d"},
	}
	for _, tt := range tests {
		if tt.step != nil {
			tt.step()
		}
		got, expires, ok := c.Nominated(tt.pod)
		if got != tt.wantTarget || ok != tt.wantOK || (ok && clk.Now().Before(expires) != tt.wantLive) {
			t.Fatalf("%s: Nominated(%s) = %q %v expiring at %s (now %s), want %q %v live %v",
				tt.name, tt.pod, got, ok, expires, clk.Now(), tt.wantTarget, tt.wantOK, tt.wantLive)
		}
	}
}

func TestLaunchMarks(t *testing.T) {
	c := NewCluster(nil, clocktesting.NewFakeClock(time.Now()), time.Minute)
	if !c.StartLaunch("x") || c.StartLaunch("x") {
		t.Fatal("a second StartLaunch of the same claim was allowed")
	}
	c.EndLaunch("x")
	if !c.StartLaunch("x") {
		t.Fatal("StartLaunch after EndLaunch was refused")
	}
}

// TestLaunchedHold: a claim this process launched is not launched again
// while the cache may still show it unlaunched, and is after LaunchedHold
// (its status write failed: the provider adopts the instance).
func TestLaunchedHold(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := NewCluster(nil, clk, time.Minute)
	if !c.StartLaunch("y") {
		t.Fatal("first StartLaunch refused")
	}
	c.Launched("y")
	c.EndLaunch("y")
	clk.Step(LaunchedHold - time.Second)
	if c.StartLaunch("y") {
		t.Fatalf("StartLaunch %s after the launch was allowed", LaunchedHold-time.Second)
	}
	if !c.StartLaunch("z") {
		t.Fatal("another claim was refused")
	}
	clk.Step(time.Second)
	if !c.StartLaunch("y") {
		t.Fatalf("StartLaunch %s after the launch was refused", LaunchedHold)
	}
	c.Launched("z") // prunes y's record
	if _, ok := c.launched["y"]; ok {
		t.Fatal("an expired launch record was kept")
	}
}

// TestPruneNominations: a nomination whose pod was deleted while pending
// is dropped once its TTL has run out; one whose pod is still cached, or
// whose TTL has not run out, is kept; and the prune runs at most once per
// TTL.
func TestPruneNominations(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := NewCluster(nil, clk, time.Minute)
	kept := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "kept"}}
	c.Nominate("kept", "claim-a")
	c.Nominate("deleted", "claim-a")
	clk.Step(30 * time.Second)
	c.Nominate("deleted-late", "claim-a")
	clk.Step(31 * time.Second) // past the first two's TTL, not the third's
	c.PruneNominations([]*corev1.Pod{kept})
	for uid, want := range map[types.UID]bool{"kept": true, "deleted": false, "deleted-late": true} {
		if _, _, ok := c.Nominated(uid); ok != want {
			t.Errorf("nomination of %s kept = %v, want %v", uid, ok, want)
		}
	}
	clk.Step(40 * time.Second) // deleted-late's TTL has run out
	c.PruneNominations([]*corev1.Pod{kept})
	if _, _, ok := c.Nominated("deleted-late"); !ok {
		t.Error("pruned again within a TTL of the last prune")
	}
	clk.Step(30 * time.Second)
	c.PruneNominations([]*corev1.Pod{kept})
	if _, _, ok := c.Nominated("deleted-late"); ok {
		t.Error("deleted-late's nomination kept a TTL after the last prune")
	}
	if _, _, ok := c.Nominated("kept"); !ok {
		t.Error("the cached pod's nomination was dropped")
	}
}

func TestInstanceID(t *testing.T) {
	for pid, want := range map[string]string{
		"aws:///us-east-1a/i-0123456789abcdef0": "i-0123456789abcdef0",
		"kwok://node-1":                         "node-1",
		"":                                      "",
		"aws:///us-east-1a/":                    "",
		"no-slash":                              "",
	} {
		if got := InstanceID(pid); got != want {
			t.Errorf("InstanceID(%q) = %q, want %q", pid, got, want)
		}
	}
}
