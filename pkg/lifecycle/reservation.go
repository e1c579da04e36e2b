package lifecycle

import (
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Ended reservations. When an ODCR (not a Capacity Block, whose instances
// EC2 terminates) expires or is cancelled, EC2 takes its instances out of
// it and bills them as ordinary on-demand instances from then on. As
// Karpenter does, the claim and its Node follow: capacity type on-demand,
// the reservation's labels dropped, priced at the on-demand price. The
// cloud's own reading of the instance says which (its capacity type is
// on-demand once it is in no reservation).

// ReservationEnded reports whether claim launched into an ODCR that its
// instance, as the cloud reads it now (instance), is no longer in.
func ReservationEnded(claim, instance *nsv1.NodeClaim) bool {
	if claim == nil || instance == nil || !claim.DeletionTimestamp.IsZero() {
		return false
	}
	reserved := claim.Labels[nsv1.LabelCapacityType] == nsv1.CapacityTypeReserved || claim.Status.CapacityType == nsv1.CapacityTypeReserved
	return reserved && claim.Labels[awsv1.LabelCapacityReservationType] != awsv1.CapacityReservationTypeCapacityBlock &&
		instance.Status.CapacityType == nsv1.CapacityTypeOnDemand
}

// OnDemandLabels changes labels (a claim's or its Node's) to those of an
// on-demand node: the capacity type on-demand, the reservation's id, type
// and interruptible labels removed. It reports whether anything changed.
func OnDemandLabels(labels map[string]string) bool {
	if labels == nil {
		return false
	}
	changed := false
	if v, ok := labels[nsv1.LabelCapacityType]; ok && v != nsv1.CapacityTypeOnDemand {
		labels[nsv1.LabelCapacityType] = nsv1.CapacityTypeOnDemand
		changed = true
	}
	for _, k := range []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible} {
		if _, ok := labels[k]; ok {
			delete(labels, k)
			changed = true
		}
	}
	return changed
}
