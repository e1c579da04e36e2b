package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// Reserved capacity. A reserved offering (catalog.WithReservations) is a
// capacity reservation with instances free: launching into it costs nothing
// more, so a claim that fits one takes it before any spot or on-demand
// option. Each reservation sells only the instances it has free, counted
// down as claims are given their options (buildClaims, in bin order), so
// one plan never asks a reservation for more than it holds; a claim past
// the count gets spot or on-demand options as if there were no
// reservation.
//
// A reserved claim has exactly one option — one type, one zone, one
// reservation — so the count is exact whichever option EC2 would pick.
// Packing opens the reservations' bins first (seedReservations), one per
// free instance, so pods are laid out on paid-for capacity before the LP
// and the greedy packer buy anything; a reserved slot otherwise counts at
// the type's on-demand price. A pool with minValues does not use
// reservations (one option cannot meet them).

// resOffering is one reserved offering of a pool type.
type resOffering struct {
	slot int
	zone string
	ref  *catalog.ReservationRef
}

// packingPrice is what a reserved slot of it counts as when bins are sized
// and types compared: its on-demand price (its dearest on-demand
// offering's when the type does not say), what the reservation is billed
// at. The reservations' own bins come from seedReservations, counted; a
// price near zero here would have the LP buy the reserved type without
// limit.
func packingPrice(it *catalog.InstanceType) float64 {
	price := it.OnDemandPrice
	if price <= 0 {
		for _, o := range it.Offerings {
			if o.CapacityType == nsv1.CapacityTypeOnDemand && o.Price > price {
				price = o.Price
			}
		}
	}
	return price
}

// seedReservations opens, before the LP and the greedy packer, one bin per
// instance each reservation of p's types has free (less the bins earlier
// pools and rounds opened for it), of the reserved type and pinned to its
// zone, each filled with the pods that fit as the other packers fill: paid
// capacity is used before anything is bought. The repack moves leave these
// bins alone.
func (s *solver) seedReservations(p *pool, rest []*item, fx *fillIndex) {
	if s.reserved == 0 || len(p.mv) > 0 {
		return
	}
	if s.resBins == nil {
		s.resBins = map[string]int{}
	}
	for ti, pt := range p.types {
		for _, r := range pt.res {
			for s.resBins[r.ref.ID] < r.ref.Available {
				anchor := s.reservedAnchor(ti, pt, r, rest)
				if anchor == nil || !s.canOpen(p) {
					break
				}
				b := s.open(p, anchor, ti)
				b.slots &= s.zoneMask(s.slots.zone[r.slot])
				b.reserved = r.ref.ID
				if !s.tryAdd(b, anchor, false) {
					s.closeEmpty(b)
					break
				}
				s.resBins[r.ref.ID]++
				s.fill(b, fx, false)
			}
		}
	}
}

// reservedAnchor is the first item with pods left that may go to type ti in
// reservation r's slot.
func (s *solver) reservedAnchor(ti int, pt *poolType, r resOffering, rest []*item) *item {
	for _, it := range rest {
		if len(it.st.left) > 0 && !it.dead && it.f.types.has(ti) && it.f.slots&(1<<r.slot) != 0 && it.c.req.fits(pt.alloc) {
			return it
		}
	}
	return nil
}

// resetReservations starts the count of every reservation the pools offer
// over from what it has free.
func (s *solver) resetReservations() {
	s.resLeft = map[string]int{}
	for _, p := range s.pools {
		for _, pt := range p.types {
			for _, r := range pt.res {
				s.resLeft[r.ref.ID] = r.ref.Available
			}
		}
	}
}

// freeReservation is the first reservation of pt in slot si with an
// instance left in this plan, or nil.
func (s *solver) freeReservation(pt *poolType, si int) *catalog.ReservationRef {
	for _, r := range pt.res {
		if r.slot == si && s.resLeft[r.ref.ID] > 0 {
			return r.ref
		}
	}
	return nil
}

// claimReserved builds b's claim on a reservation that has an instance
// left and whose type holds the bin (within), and takes the instance;
// false when there is none.
func (s *solver) claimReserved(b *bin, within func(*poolType) bool) (*ClaimPlan, vec, bool) {
	if b.slots&s.reserved == 0 || len(b.p.mv) > 0 {
		return nil, nil, false
	}
	claim, maxCap, err := s.claimOptions(b, s.reserved, within)
	if err != nil || len(claim.Options) == 0 || claim.Options[0].Reservation == nil {
		return nil, nil, false
	}
	o := claim.Options[0]
	claim.Options = claim.Options[:1]
	claim.Requirements[corev1.LabelInstanceTypeStable] = NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, o.InstanceType.Name)
	claim.Requirements[corev1.LabelTopologyZone] = NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, o.Zone)
	claim.Requirements[nsv1.LabelCapacityType] = NewRequirement(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeReserved)
	claim.Requirements[awsv1.LabelCapacityReservationID] = NewRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, o.Reservation.ID)
	for k, v := range catalog.ReservationLabels(o.Reservation) {
		claim.Labels[k] = v
	}
	s.resLeft[o.Reservation.ID]--
	return claim, maxCap, true
}
