package simulator

import (
	"context"
	"strings"
	"testing"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// blockEnds is when reserved-capacity.yaml's Capacity Block ends.
const blockEnds = 55 * time.Minute

// reserved-capacity.yaml: the burst fills the ODCR's 10 m6i.xlarge and the
// Capacity Block's 3 c7i.2xlarge before buying spot; the block's nodes are
// replaced and drained from 40 minutes before its end, gone before EC2
// reclaims them 30 minutes before it, and no pod is left pending. The same
// run with the node class selecting no reservation (what a provisioner
// that ignores them does, while the account pays for them all the same)
// costs more.
func TestReservedCapacityScenario(t *testing.T) {
	res := runCached(t, "reserved-capacity.yaml")
	reserved := map[string]int{}
	for _, l := range res.Launches {
		if l.CapacityType != nsv1.CapacityTypeReserved {
			continue
		}
		reserved[l.InstanceType]++
		if l.Cost != 0 || l.Price != 0 {
			t.Errorf("reserved %s billed at $%.4f/h ($%.4f): a reservation's instance costs nothing more", l.NodeClaim, l.Price, l.Cost)
		}
		if l.InstanceType == "m6i.xlarge" && l.Terminated {
			// Consolidation never replaces a node that costs nothing more.
			t.Errorf("ODCR node %s went away at %s (%s)", l.NodeClaim, l.TerminatedAt, l.Reason)
		}
		if l.InstanceType == "c7i.2xlarge" {
			drainAt := blockEnds - catalog.CapacityBlockDrainLead
			reclaim := blockEnds - catalog.CapacityBlockReclaimLead
			if !l.Terminated || l.TerminatedAt < drainAt || l.TerminatedAt >= reclaim {
				t.Errorf("block node %s: terminated %v at %s; want gone between %s and the reclaim at %s", l.NodeClaim, l.Terminated, l.TerminatedAt, drainAt, reclaim)
			}
		}
	}
	if reserved["m6i.xlarge"] != 10 || reserved["c7i.2xlarge"] != 3 {
		t.Errorf("reserved launches %v, want 10 m6i.xlarge and 3 c7i.2xlarge", reserved)
	}
	if !res.AllPodsRunning.Reached {
		t.Error("the pods never all ran")
	}
	end := res.Samples[len(res.Samples)-1]
	if end.PendingPods != 0 || end.RunningPods != 80 || len(res.StillPending) != 0 {
		t.Errorf("at the end: %d pending, %d running (%v); want 0 and 80", end.PendingPods, end.RunningPods, res.StillPending)
	}
	for _, l := range res.Launches {
		// Between the burst and the block's drain nothing needs a node.
		if l.LaunchedAt > time.Minute && l.LaunchedAt < blockEnds-catalog.CapacityBlockDrainLead {
			t.Errorf("%s launched at %s, before the block's drain: nothing should need it", l.NodeClaim, l.LaunchedAt)
		}
	}

	ignored, err := Run(context.Background(), loadExample(t, "reserved-capacity.yaml"), Options{IgnoreCommitments: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ignored.Launches {
		if l.CapacityType == nsv1.CapacityTypeReserved {
			t.Fatalf("%s launched into a reservation no node class selects", l.NodeClaim)
		}
	}
	with, without := res.Total(), ignored.Total()
	t.Logf("with reservations: launched $%.4f + reservations $%.4f = $%.4f; ignoring them: launched $%.4f + reservations $%.4f = $%.4f (%.1f%% less)",
		res.Cost, res.ReservationCost, with, ignored.Cost, ignored.ReservationCost, without, 100*(1-with/without))
	if res.ReservationCost != ignored.ReservationCost || res.ReservationCost <= 0 {
		t.Errorf("the reservations cost $%.4f and $%.4f: the account pays them either way", res.ReservationCost, ignored.ReservationCost)
	}
	if with >= without {
		t.Errorf("using the reservations costs $%.4f, ignoring them $%.4f", with, without)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "CapacityBlockExpiring") {
		t.Error("no CapacityBlockExpiring note: the block's nodes were not marked")
	}
}
