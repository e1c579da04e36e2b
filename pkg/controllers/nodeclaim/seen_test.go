package nodeclaim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TestSeenForgetsLaunchesOfGoneClaims: a launch is counted while the cache
// has not caught up with its claim, but not once the claim is gone. The
// lab's step 1b failed without this: the claims an earlier step launched
// and deleted were still counted against the pool's new 16-cpu limit,
// every launch was refused, and the provisioner planned them again in a
// loop.
func TestSeenForgetsLaunchesOfGoneClaims(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC))
	ll := newLaunchLimits(clk)
	claim := func(name string, withCapacity bool) *nsv1.NodeClaim {
		c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nsv1.LabelNodePool: "p"}}}
		if withCapacity {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
		}
		return c
	}
	ll.launched(claim("a", true))
	ll.launched(claim("b", true))
	// Just launched: the cache lists a without its capacity yet, not b.
	if got := ll.seen("p", []*nsv1.NodeClaim{claim("a", false)}); len(got) != 2 {
		t.Fatalf("right after the launches: %d counted, want both", len(got))
	}
	clk.Step(cacheLag)
	// a is listed (still without capacity): counted; b is not listed
	// after the cache lag: gone, forgotten.
	got := ll.seen("p", []*nsv1.NodeClaim{claim("a", false)})
	if _, ok := got["a"]; !ok || len(got) != 1 {
		t.Fatalf("after the cache lag: counted %v, want only a", got)
	}
	// Once the cache shows a's capacity it is counted from the claim.
	if got := ll.seen("p", []*nsv1.NodeClaim{claim("a", true)}); len(got) != 0 {
		t.Fatalf("a listed with its capacity: still counted %v", got)
	}
}

// A later launch drops an expired one from memory; pruning runs at most
// every pruneEvery, not at every launch.
func TestLaunchedDropsExpiredEntries(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC))
	ll := newLaunchLimits(clk)
	claim := func(name string) *nsv1.NodeClaim {
		return &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nsv1.LabelNodePool: "p"}},
			Status: nsv1.NodeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	}
	ll.launched(claim("a"))
	clk.Step(launchedTTL)
	ll.launched(claim("b"))
	if _, ok := ll.recent["p"]["a"]; ok || len(ll.recent["p"]) != 1 {
		t.Fatalf("kept %v, want only b", ll.recent["p"])
	}
}
