package catalog

import (
	"slices"
	"sort"
	"strconv"
	"time"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Reserved offerings. A capacity reservation (an ODCR or a Capacity Block)
// is paid for whether or not an instance runs in it, so launching into it
// costs nothing more: its offering is priced at zero and is the first any
// price-ordered choice takes. It sells only as many instances as the
// reservation has free, which the solver counts down within one plan
// (scheduling) and the provider's ICE cache marks used up when EC2 says so.

// Capacity Block timing. EC2 reclaims a Capacity Block's instances 30
// minutes before the block ends; Karpenter starts draining them 10 minutes
// before that, and so do we: a block takes no new launch, and its nodes are
// drained, from 40 minutes before its end.
const (
	CapacityBlockReclaimLead = 30 * time.Minute
	CapacityBlockDrainLead   = CapacityBlockReclaimLead + 10*time.Minute
)

// Reservation is a capacity reservation as the catalog prices it.
type Reservation struct {
	ID           string
	Type         string // awsv1.CapacityReservationTypeDefault or …CapacityBlock
	InstanceType string
	Zone         string
	// Available is how many instances it has free.
	Available int
	// End is when the reservation ends; zero when it has no end date.
	End time.Time
	// Interruptible: its owner may reclaim the capacity with a two-minute
	// warning.
	Interruptible bool
}

// ReservationRef is what a reserved offering knows of its reservation.
type ReservationRef struct {
	ID            string
	Type          string
	Available     int
	End           time.Time
	Interruptible bool
}

// DrainAt is when nodes in a reservation ending at end must start to go,
// and when it stops taking launches: a Capacity Block's end less
// CapacityBlockDrainLead, an ODCR's end itself (its instances then simply
// run on as on-demand). Zero when end is zero.
func DrainAt(reservationType string, end time.Time) time.Time {
	if end.IsZero() {
		return time.Time{}
	}
	if reservationType == awsv1.CapacityReservationTypeCapacityBlock {
		return end.Add(-CapacityBlockDrainLead)
	}
	return end
}

// Usable reports whether r can take a launch at now: it has an instance
// free and its end (for a Capacity Block, its drain time) is still ahead.
func (r Reservation) Usable(now time.Time) bool {
	if r.Available <= 0 {
		return false
	}
	at := DrainAt(r.Type, r.End)
	return at.IsZero() || now.Before(at)
}

// WithReservations returns types with one reserved offering added per
// usable reservation of that type (price zero, Available, its zone), in
// reservation id order; types without a usable reservation are returned
// as they are, others are copies (WithOfferings), so a shared catalog is
// never changed. Reservations of types not in the list are ignored.
func WithReservations(types []*InstanceType, rs []Reservation, now time.Time) []*InstanceType {
	byType := map[string][]Reservation{}
	for _, r := range rs {
		if r.Usable(now) {
			byType[r.InstanceType] = append(byType[r.InstanceType], r)
		}
	}
	if len(byType) == 0 {
		return types
	}
	out := make([]*InstanceType, len(types))
	for i, it := range types {
		mine := byType[it.Name]
		if len(mine) == 0 {
			out[i] = it
			continue
		}
		sort.Slice(mine, func(a, b int) bool { return mine[a].ID < mine[b].ID })
		ofs := make(Offerings, 0, len(it.Offerings)+len(mine))
		for _, o := range it.Offerings {
			if o.CapacityType != nsv1.CapacityTypeReserved {
				ofs = append(ofs, o)
			}
		}
		for _, r := range mine {
			ofs = append(ofs, Offering{
				Zone: r.Zone, CapacityType: nsv1.CapacityTypeReserved, Price: 0, Available: true,
				Reservation: &ReservationRef{ID: r.ID, Type: r.Type, Available: r.Available, End: r.End, Interruptible: r.Interruptible},
			})
		}
		out[i] = it.withOfferings(ofs)
	}
	return out
}

// ReservationsFromStatus are a node class's resolved reservations
// (status.capacityReservations) in the given zones (the zones of its
// subnets: a reservation elsewhere cannot be launched into), as the catalog
// prices them. The AWS provider and the CLI's plan both read them so.
func ReservationsFromStatus(rs []awsv1.CapacityReservation, zones []string) []Reservation {
	var out []Reservation
	for _, r := range rs {
		if !slices.Contains(zones, r.AvailabilityZone) {
			continue
		}
		cr := Reservation{ID: r.ID, Type: r.ReservationType, InstanceType: r.InstanceType, Zone: r.AvailabilityZone,
			Available: int(r.AvailableInstanceCount), Interruptible: r.Interruptible}
		if r.EndTime != nil {
			cr.End = r.EndTime.Time
		}
		out = append(out, cr)
	}
	return out
}

// ReservationLabels are the labels a node launched into r carries besides
// the offering's zone and capacity type.
func ReservationLabels(r *ReservationRef) map[string]string {
	if r == nil {
		return nil
	}
	t := r.Type
	if t == "" {
		t = awsv1.CapacityReservationTypeDefault
	}
	return map[string]string{awsv1.LabelCapacityReservationID: r.ID, awsv1.LabelCapacityReservationType: t,
		awsv1.LabelCapacityReservationInterruptible: strconv.FormatBool(r.Interruptible)}
}
