package simulator

import (
	"context"
	"testing"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// commitments.yaml's Capacity Block ends at 50m: the product marks its
// nodes at 10m, EC2 reclaims them at 20m.
const commitmentsBlockEnds = 50 * time.Minute

// commitments.yaml: an ODCR of 10 m6i.xlarge, a Capacity Block of 3
// c7i.2xlarge ending mid-run and a $2.50/h Compute Savings Plan, against
// the same run ignoring them (Options.IgnoreCommitments: the account
// still pays for them).
//
//   - the ODCR is used first: its 10 instances are launched before any
//     on-demand or spot node and kept all run;
//   - the block's nodes are drained before EC2 reclaims them and no pod is
//     lost: each was drained onto ready capacity (nothing stranded), every
//     pod of its workloads ran elsewhere at the reclaim, and no pod stays
//     Pending longer than a re-schedule;
//   - the Savings Plan changes what is launched: with it the first plan
//     buys on-demand (covered) where without it, reservations still
//     honoured, it buys spot;
//   - honouring them costs the account less than ignoring them.
func TestCommitmentsScenario(t *testing.T) {
	res := runCached(t, "commitments.yaml")

	// The ODCR first.
	firstBought := -1
	odcr := 0
	for i, l := range res.Launches {
		if l.CapacityType != nsv1.CapacityTypeReserved {
			if firstBought < 0 {
				firstBought = i
			}
			continue
		}
		if l.InstanceType != "m6i.xlarge" {
			continue
		}
		odcr++
		if firstBought >= 0 {
			t.Errorf("ODCR node %s launched at %s after %s (%s) was bought", l.NodeClaim, l.LaunchedAt, res.Launches[firstBought].NodeClaim, res.Launches[firstBought].CapacityType)
		}
		if l.Terminated {
			t.Errorf("ODCR node %s went away at %s (%s): it costs nothing more", l.NodeClaim, l.TerminatedAt, l.Reason)
		}
	}
	if odcr != 10 || firstBought < 10 {
		t.Errorf("%d ODCR launches, the first bought node at launch %d; want the 10 ODCR nodes first", odcr, firstBought)
	}

	// The Capacity Block: drained between the mark and the reclaim, no pod lost.
	drainAt := commitmentsBlockEnds - catalog.CapacityBlockDrainLead
	reclaim := commitmentsBlockEnds - catalog.CapacityBlockReclaimLead
	blockNodes := 0
	for _, l := range res.Launches {
		if l.CapacityType != nsv1.CapacityTypeReserved || l.InstanceType != "c7i.2xlarge" {
			continue
		}
		blockNodes++
		if !l.Terminated || l.TerminatedAt < drainAt || l.TerminatedAt >= reclaim || l.Reason != "deleted" {
			t.Errorf("block node %s: terminated %v at %s (%s); want deleted by Nodesmith between %s and the reclaim at %s",
				l.NodeClaim, l.Terminated, l.TerminatedAt, l.Reason, drainAt, reclaim)
		}
	}
	notices := 0
	for _, in := range res.Interruptions {
		if in.Kind != kindCapacityBlock {
			continue
		}
		notices++
		if in.At != drainAt || !in.Deadline.Reached || in.Deadline.At != reclaim {
			t.Errorf("%s marked at %s with deadline %s; want %s and %s", in.NodeClaim, in.At, in.Deadline, drainAt, reclaim)
		}
		if in.Pods == 0 || !in.Drained.Reached || in.Drained.At >= reclaim || in.Stranded != 0 || in.NotRunningAtDeadline != 0 {
			t.Errorf("%s (%d pods): drained %s, %d stranded, %d not running at the reclaim; want drained before %s, none stranded, all running",
				in.NodeClaim, in.Pods, in.Drained, in.Stranded, in.NotRunningAtDeadline, reclaim)
		}
	}
	if blockNodes != 3 || notices != 3 {
		t.Errorf("%d block nodes, %d capacity block records; want 3 and 3", blockNodes, notices)
	}
	if !res.AllPodsRunning.Reached {
		t.Fatal("the pods never all ran")
	}
	longest := longestPending(res.Samples, res.AllPodsRunning.At)
	t.Logf("longest stretch with a pod pending after all first ran: %s", longest)
	if longest > time.Minute {
		t.Errorf("after all pods first ran, pods stayed pending for %s at a stretch; want a re-schedule (under a minute)", longest)
	}
	end := res.Samples[len(res.Samples)-1]
	if end.RunningPods != 88 || end.PendingPods != 0 || len(res.StillPending) != 0 {
		t.Errorf("at the end %d running, %d pending (%v); want 88 and 0", end.RunningPods, end.PendingPods, res.StillPending)
	}

	// The Savings Plan alone: the same run, reservations honoured, no plan.
	sc := loadExample(t, "commitments.yaml")
	sc.Commitments = nil
	noPlan := run(t, sc)
	withOD, withSpot := firstPlan(res.Launches)
	noOD, noSpot := firstPlan(noPlan.Launches)
	t.Logf("first plan's bought nodes: with the plan %d on-demand, %d spot; without it %d on-demand, %d spot", withOD, withSpot, noOD, noSpot)
	if withOD <= noOD || withSpot >= noSpot {
		t.Errorf("the Savings Plan changed nothing the first plan bought: %d on-demand, %d spot with it; %d and %d without", withOD, withSpot, noOD, noSpot)
	}
	if res.CommitmentCovered <= 0 || res.CommitmentCovered > res.CommitmentCost {
		t.Errorf("the plan covered $%.4f of $%.4f", res.CommitmentCovered, res.CommitmentCost)
	}

	// Ignoring them all.
	ignored, err := Run(context.Background(), loadExample(t, "commitments.yaml"), Options{IgnoreCommitments: true})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := output.ByCapacityType(ignored.Launches); r != 0 {
		t.Errorf("ignoring them, %d nodes launched into a reservation", r)
	}
	if ignored.ReservationCost != res.ReservationCost || ignored.CommitmentCost != res.CommitmentCost || res.ReservationCost <= 0 || res.CommitmentCost <= 0 {
		t.Errorf("reservations $%.4f and $%.4f, commitments $%.4f and $%.4f: the account pays the same for them either way",
			res.ReservationCost, ignored.ReservationCost, res.CommitmentCost, ignored.CommitmentCost)
	}
	t.Logf("honoured: launched $%.4f − covered $%.4f + plan $%.4f + reservations $%.4f = $%.4f; ignored: $%.4f − $%.4f + $%.4f + $%.4f = $%.4f",
		res.Cost, res.CommitmentCovered, res.CommitmentCost, res.ReservationCost, res.Total(),
		ignored.Cost, ignored.CommitmentCovered, ignored.CommitmentCost, ignored.ReservationCost, ignored.Total())
	if res.Total() >= ignored.Total() {
		t.Errorf("honouring them costs $%.4f, ignoring them $%.4f", res.Total(), ignored.Total())
	}
}

// firstPlan counts the on-demand and spot nodes launched at the first
// launch instant.
func firstPlan(ls []output.Launch) (onDemand, spot int) {
	if len(ls) == 0 {
		return 0, 0
	}
	for _, l := range ls {
		if l.LaunchedAt != ls[0].LaunchedAt {
			break
		}
		switch l.CapacityType {
		case nsv1.CapacityTypeOnDemand:
			onDemand++
		case nsv1.CapacityTypeSpot:
			spot++
		}
	}
	return onDemand, spot
}

// longestPending is the longest run of samples from `from` on with a
// workload pod pending (or starting), as time from its first sample to
// the next sample with none.
func longestPending(samples []output.Sample, from time.Duration) time.Duration {
	var longest, start time.Duration
	in := false
	for _, s := range samples {
		if s.T < from {
			continue
		}
		switch {
		case s.PendingPods > 0 && !in:
			in, start = true, s.T
		case s.PendingPods == 0 && in:
			in = false
			longest = max(longest, s.T-start)
		}
	}
	if in {
		longest = max(longest, samples[len(samples)-1].T-start)
	}
	return longest
}
