package state

import (
	"testing"
	"time"

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
