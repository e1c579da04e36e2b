package catalog

import (
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestUnavailableOfferingsTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	u := NewUnavailableOfferings(clk, 0) // 0 → the 3m default
	const it, zone, spot = "m5.large", "us-east-1a", nsv1.CapacityTypeSpot

	seq0 := u.SeqNum()
	u.MarkUnavailable(it, zone, spot, "InsufficientInstanceCapacity")
	steps := []struct {
		advance                 time.Duration
		wantHidden, wantSeqMove bool
	}{
		{0, true, true}, // just marked
		{2*time.Minute + 59*time.Second, true, false}, // still inside the TTL
		{time.Second, false, true},                    // 3m reached: expired, seq moves
		{time.Hour, false, false},                     // nothing left to change
	}
	seq := seq0
	for i, s := range steps {
		clk.Step(s.advance)
		if got := u.IsUnavailable(it, zone, spot); got != s.wantHidden {
			t.Errorf("step %d: IsUnavailable = %v, want %v", i, got, s.wantHidden)
		}
		next := u.SeqNum()
		if (next != seq) != s.wantSeqMove {
			t.Errorf("step %d: seq %d → %d, want moved=%v", i, seq, next, s.wantSeqMove)
		}
		seq = next
	}
	// Other offerings of the same type were never hidden.
	if u.IsUnavailable(it, zone, nsv1.CapacityTypeOnDemand) || u.IsUnavailable(it, "us-east-1b", spot) {
		t.Error("a neighbouring offering is hidden")
	}
}

func TestUnavailableOfferingsRemarkExtends(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	u := NewUnavailableOfferings(clk, time.Minute)
	u.MarkUnavailable("c5.large", "z1", "spot", "ice")
	seq := u.SeqNum()
	clk.Step(50 * time.Second)
	u.MarkUnavailable("c5.large", "z1", "spot", "ice again")
	if u.SeqNum() != seq {
		t.Error("re-marking a hidden offering changed seq although nothing new is hidden")
	}
	clk.Step(50 * time.Second) // 100s after the first mark, 50s after the second
	if !u.IsUnavailable("c5.large", "z1", "spot") {
		t.Error("re-marking did not restart the TTL")
	}
	entries := u.Entries()
	if len(entries) != 1 || entries[0].Reason != "ice again" {
		t.Errorf("entries %+v", entries)
	}
	u.Delete("c5.large", "z1", "spot")
	if u.IsUnavailable("c5.large", "z1", "spot") || u.SeqNum() == seq {
		t.Error("Delete did not un-hide the offering and move seq")
	}
}

func TestMarkCapacityTypeUnavailable(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	u := NewUnavailableOfferings(clk, time.Minute)
	u.MarkCapacityTypeUnavailable(nsv1.CapacityTypeSpot, "spot service-linked role missing")
	if !u.IsUnavailable("anything.large", "any-zone", nsv1.CapacityTypeSpot) {
		t.Error("spot not hidden everywhere")
	}
	if u.IsUnavailable("anything.large", "any-zone", nsv1.CapacityTypeOnDemand) {
		t.Error("on-demand hidden too")
	}
	clk.Step(time.Minute)
	if u.IsUnavailable("anything.large", "any-zone", nsv1.CapacityTypeSpot) {
		t.Error("wildcard did not expire")
	}
}

func TestWithAvailability(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	u := NewUnavailableOfferings(clk, DefaultUnavailableTTL)
	c := mustLoad(t, Options{})
	m5, _ := c.Get("m5.large")
	z := m5.Offerings[0].Zone
	u.MarkUnavailable("m5.large", z, nsv1.CapacityTypeSpot, "ice")

	types := []*InstanceType{m5}
	got := WithAvailability(types, u)
	hidden, ok := got[0].Offerings.Get(z, nsv1.CapacityTypeSpot)
	if !ok || hidden.Available {
		t.Errorf("marked offering %+v still available", hidden)
	}
	if n, want := len(got[0].Offerings.Available()), len(m5.Offerings)-1; n != want {
		t.Errorf("%d available offerings, want %d", n, want)
	}
	if orig, _ := m5.Offerings.Get(z, nsv1.CapacityTypeSpot); !orig.Available {
		t.Error("WithAvailability modified the catalog's type")
	}
	if got[0] == m5 || got[0].Name != m5.Name || got[0].Allocatable() == nil {
		t.Error("WithAvailability did not return a usable copy")
	}

	clk.Step(DefaultUnavailableTTL)
	again := WithAvailability(types, u)
	if n := len(again[0].Offerings.Available()); n != len(m5.Offerings) {
		t.Errorf("after the TTL %d of %d offerings available", n, len(m5.Offerings))
	}

	// Offerings already unavailable stay so; a nil cache copies as-is.
	down := m5.withOfferings(Offerings{{Zone: z, CapacityType: "spot", Price: 1, Available: false}})
	if out := WithAvailability([]*InstanceType{down}, nil); out[0].Offerings[0].Available || out[0] == down {
		t.Error("nil cache: want an unchanged copy")
	}
}

// The cache is shared by launches, the interruption handler and readers;
// run with -race to check the locking.
func TestUnavailableOfferingsConcurrent(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	u := NewUnavailableOfferings(clk, time.Minute)
	types := []*InstanceType{{Name: "a", Offerings: Offerings{{Zone: "z", CapacityType: "spot", Available: true}}}}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				u.MarkUnavailable("a", "z", "spot", "ice")
				_ = u.IsUnavailable("a", "z", "spot")
				_ = u.SeqNum()
				_ = WithAvailability(types, u)
				_ = u.Entries()
				clk.Step(time.Second)
			}
		}()
	}
	wg.Wait()
	if !u.IsUnavailable("a", "z", "spot") {
		t.Error("last mark lost")
	}
}
