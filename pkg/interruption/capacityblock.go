package interruption

import (
	"fmt"
	"time"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// Capacity Blocks end. EC2 reclaims a Capacity Block's instances
// catalog.CapacityBlockReclaimLead (30 minutes) before the block's end; as
// Karpenter does, a node in a block is marked 10 minutes before that
// (catalog.CapacityBlockDrainLead, 40 minutes before the end), the same
// mark an interruption notice gives, with the reclaim as its deadline. The
// disruption executor then carries it out like any interruption: the
// replacements launch at once, and the node is drained when they have
// initialized, or at the deadline less its pods' grace periods.

// InCapacityBlock reports the Capacity Block a claim launched into, from
// its labels; false for any other claim.
func InCapacityBlock(claim *nsv1.NodeClaim) (string, bool) {
	if claim == nil || claim.Labels[awsv1.LabelCapacityReservationType] != awsv1.CapacityReservationTypeCapacityBlock {
		return "", false
	}
	id := claim.Labels[awsv1.LabelCapacityReservationID]
	return id, id != ""
}

// CapacityBlockMark is the mark a claim in a Capacity Block ending at end
// gets at now: due from catalog.DrainAt (40 minutes before the end), its
// deadline the reclaim (30 minutes before). When not due, next is the
// instant it will be. A zero end is never due.
func CapacityBlockMark(end, now time.Time) (m Mark, due bool, next time.Time) {
	if end.IsZero() {
		return Mark{}, false, time.Time{}
	}
	at := catalog.DrainAt(awsv1.CapacityReservationTypeCapacityBlock, end)
	if now.Before(at) {
		return Mark{}, false, at
	}
	return Mark{Reason: nsv1.DisruptingReasonCapacityBlockExpiring, Deadline: end.Add(-catalog.CapacityBlockReclaimLead)}, true, time.Time{}
}

// CapacityBlockMessage says why a block's node is marked.
func CapacityBlockMessage(id string, end time.Time) string {
	return fmt.Sprintf("capacity block %s ends at %s; EC2 reclaims its instances 30m before", id, end.UTC().Format(time.RFC3339))
}
