package cloudprovider

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func claimWith(uid, attempt string) *nsv1.NodeClaim {
	c := &nsv1.NodeClaim{}
	c.Name, c.UID = "c", types.UID(uid)
	if attempt != "" {
		c.Annotations = map[string]string{nsv1.AnnotationLaunchAttempt: attempt}
	}
	return c
}

func TestLaunchAttempt(t *testing.T) {
	tests := []struct {
		annotation string
		want, next int
	}{
		{"", 0, 1},
		{"0", 0, 1},
		{"3", 3, 4},
		{"-2", 0, 1},   // not a launch attempt: read as the first
		{"many", 0, 1}, // likewise
	}
	for _, tt := range tests {
		c := claimWith("u", tt.annotation)
		if got := LaunchAttempt(c); got != tt.want {
			t.Errorf("LaunchAttempt(%q) = %d, want %d", tt.annotation, got, tt.want)
		}
		NextLaunchAttempt(c)
		if got := LaunchAttempt(c); got != tt.next {
			t.Errorf("after NextLaunchAttempt(%q): %d, want %d", tt.annotation, got, tt.next)
		}
	}
}

func TestLaunchedFor(t *testing.T) {
	a, b, other := claimWith("ua", ""), claimWith("ub", ""), claimWith("uc", "")
	if LaunchKey(a) == LaunchKey(b) || len(LaunchKey(a)) != 12 {
		t.Fatalf("launch keys %q and %q: want 12 hex digits, one per claim", LaunchKey(a), LaunchKey(b))
	}
	if LaunchKey(a) != LaunchKey(claimWith("ua", "5")) {
		t.Error("a claim's launch key must not change with its launch attempt")
	}
	instance := &nsv1.NodeClaim{}
	instance.Annotations = map[string]string{AnnotationLaunchBatch: LaunchKey(a) + " " + LaunchKey(b)}
	tests := []struct {
		name     string
		instance *nsv1.NodeClaim
		claim    *nsv1.NodeClaim
		want     bool
	}{
		{"first member", instance, a, true},
		{"second member", instance, b, true},
		{"not a member", instance, other, false},
		{"an instance of no shared launch", &nsv1.NodeClaim{}, a, false},
	}
	for _, tt := range tests {
		if got := LaunchedFor(tt.instance, tt.claim); got != tt.want {
			t.Errorf("%s: LaunchedFor = %v, want %v", tt.name, got, tt.want)
		}
	}
}
