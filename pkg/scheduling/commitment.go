package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// Commitments (Savings Plans, Reserved Instances; catalog.Ledger). The
// running on-demand nodes are charged to Input.Commitments first; what is
// left makes covered on-demand capacity free at the margin. The one place
// the solver reads it is the choice of a claim's capacity type (claimFor):
// an on-demand slot counts at its marginal price (zero while covered), so
// a claim takes on-demand rather than spot while a commitment would
// otherwise go unused. Each on-demand claim is charged to the ledger in
// build order, so one plan never counts the same committed dollar twice;
// past the commitment on-demand is back at its price. Packing (bin sizes,
// the LP) still reads list prices: a commitment changes what is bought,
// not how pods are laid out.

// resetCommitments starts the ledger over: the commitments, less the
// on-demand nodes running or in flight.
func (s *solver) resetCommitments() {
	s.ledger = CommitmentLedger(s.in)
}

// CommitmentLedger is in's commitments less the on-demand nodes running or
// in flight (nodes marked for deletion are not charged); nil without
// commitments. Plan reporting charges claims to it as the solver does.
func CommitmentLedger(in Input) *catalog.Ledger {
	if len(in.Commitments) == 0 {
		return nil
	}
	l := catalog.NewLedger(in.Commitments)
	byName := map[string]*catalog.InstanceType{}
	for _, p := range in.NodePools {
		for _, it := range p.InstanceTypes {
			byName[it.Name] = it
		}
	}
	for _, n := range in.Nodes {
		if n.MarkedForDeletion || n.Labels[nsv1.LabelCapacityType] != nsv1.CapacityTypeOnDemand {
			continue
		}
		if it := byName[n.Labels[corev1.LabelInstanceTypeStable]]; it != nil {
			l.ChargeType(it, nsv1.CapacityTypeOnDemand)
		}
	}
	return l
}

// ChargeClaim charges an on-demand claim's cheapest option to l and
// returns the part covered; zero for other claims or a nil ledger.
func ChargeClaim(l *catalog.Ledger, c *ClaimPlan) float64 {
	if l.Empty() || len(c.Options) == 0 || c.Options[0].CapacityType != nsv1.CapacityTypeOnDemand {
		return 0
	}
	o := c.Options[0]
	return l.Charge(o.InstanceType.Family, o.InstanceType.Region(), o.Price)
}

// marginalPrice is what slot si of pt counts as when a claim's capacity type is
// chosen: an on-demand slot's marginal price under the commitments, any
// other its price.
func (s *solver) marginalPrice(pt *poolType, si int) float64 {
	if s.ledger.Empty() || s.slots.ct[si] != nsv1.CapacityTypeOnDemand {
		return pt.price[si]
	}
	return s.ledger.Marginal(pt.it.Family, pt.it.Region(), pt.price[si])
}

// chargeCommitments charges an on-demand claim's cheapest option to the
// ledger and records the part covered.
func (s *solver) chargeCommitments(c *ClaimPlan) {
	c.Committed = ChargeClaim(s.ledger, c)
}
