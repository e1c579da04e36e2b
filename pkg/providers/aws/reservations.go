package aws

import (
	"context"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
)

// Capacity reservations. The node class's capacityReservationSelectorTerms
// resolve (DescribeCapacityReservations, active ones only) into
// status.capacityReservations; each becomes a reserved offering of its type
// in its zone (catalog.WithReservations) while it has an instance free and
// the class has a subnet in its zone. A reserved launch names its
// reservation in the launch template (CapacityReservationTarget; a Capacity
// Block also sets the capacity-block market type and fleet capacity type),
// so open and targeted reservations are used alike.
//
// What a reservation has free is EC2's count as last read, less the
// launches into it since (the ledger below), so a burst does not ask a
// reservation for more than it holds between two reads; an answer of
// ReservationCapacityExceeded sets it to zero and marks the offering in the
// ICE cache until the next read says otherwise.

// reservationLedger is what each reservation has free, by id.
type reservationLedger struct {
	mu   sync.Mutex
	free map[string]int
}

// observe takes the counts EC2 just answered.
func (l *reservationLedger) observe(rs []awsv1.CapacityReservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.free == nil {
		l.free = map[string]int{}
	}
	for _, r := range rs {
		l.free[r.ID] = int(r.AvailableInstanceCount)
	}
}

// launched counts one launch into id.
func (l *reservationLedger) launched(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.free[id]; ok && n > 0 {
		l.free[id] = n - 1
	}
}

// exhausted records that EC2 said id has nothing free.
func (l *reservationLedger) exhausted(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.free == nil {
		l.free = map[string]int{}
	}
	l.free[id] = 0
}

// available is what id has free: the ledger's count, or def when the
// ledger has not seen it.
func (l *reservationLedger) available(id string, def int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.free[id]; ok {
		return n
	}
	return def
}

// resolveCapacityReservations reads the reservations the terms select:
// active ones, by id, or by tags and owner. Ids that do not exist are a
// ResolveError naming them.
func (p *Provider) resolveCapacityReservations(ctx context.Context, terms []awsv1.CapacityReservationSelectorTerm) ([]awsv1.CapacityReservation, error) {
	seen := map[string]bool{}
	var out []awsv1.CapacityReservation
	for _, t := range terms {
		in := &ec2.DescribeCapacityReservationsInput{Filters: append(tagFilters(t.Tags), ec2types.Filter{Name: aws.String("state"), Values: []string{"active"}})}
		if t.ID != "" {
			in.CapacityReservationIds = []string{t.ID}
		}
		if t.OwnerID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{t.OwnerID}})
		}
		pg := ec2.NewDescribeCapacityReservationsPaginator(p.ec2, in)
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				if errorCode(err) == "InvalidCapacityReservationId.NotFound" {
					return nil, &ResolveError{Condition: awsv1.ConditionCapacityReservationsReady, Reason: "CapacityReservationNotFound",
						Message: "capacity reservation " + t.ID + " in capacityReservationSelectorTerms does not exist in this account and region"}
				}
				return nil, &ResolveError{Condition: awsv1.ConditionCapacityReservationsReady, Reason: "DescribeCapacityReservationsFailed", Message: "describing capacity reservations", Err: explain(err)}
			}
			for _, cr := range page.CapacityReservations {
				id := aws.ToString(cr.CapacityReservationId)
				if seen[id] {
					continue
				}
				seen[id] = true
				r := awsv1.CapacityReservation{
					ID: id, ReservationType: string(cr.ReservationType), InstanceType: aws.ToString(cr.InstanceType),
					AvailabilityZone: aws.ToString(cr.AvailabilityZone), AvailableInstanceCount: int64(aws.ToInt32(cr.AvailableInstanceCount)),
					InstanceMatchCriteria: string(cr.InstanceMatchCriteria), OwnerID: aws.ToString(cr.OwnerId),
					Interruptible: aws.ToBool(cr.Interruptible),
				}
				if r.ReservationType == "" {
					r.ReservationType = awsv1.CapacityReservationTypeDefault
				}
				if cr.EndDate != nil {
					end := metav1.NewTime(cr.EndDate.UTC())
					r.EndTime = &end
				}
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	p.reservations.observe(out)
	return out, nil
}

// catalogReservations are the class's reservations as the catalog prices
// them: in a zone the class has a subnet in, not marked in the ICE cache,
// with what the ledger says each has free.
func (p *Provider) catalogReservations(res *Resolved) []catalog.Reservation {
	var out []catalog.Reservation
	for _, r := range catalog.ReservationsFromStatus(res.CapacityReservations, res.Zones()) {
		if p.ice.IsUnavailable(r.InstanceType, r.Zone, nsv1.CapacityTypeReserved) {
			continue
		}
		r.Available = p.reservations.available(r.ID, r.Available)
		out = append(out, r)
	}
	return out
}

// withReservations adds the class's reserved offerings to types.
func (p *Provider) withReservations(types []*catalog.InstanceType, res *Resolved) []*catalog.InstanceType {
	if len(res.CapacityReservations) == 0 {
		return types
	}
	return catalog.WithReservations(types, p.catalogReservations(res), p.clock.Now())
}

// fleetCapacityType is CreateFleet's DefaultTargetCapacityType for a plan:
// a reserved launch is on-demand capacity, or capacity-block for a
// Capacity Block.
func fleetCapacityType(pl plan.Plan) ec2types.DefaultTargetCapacityType {
	if pl.CapacityType != nsv1.CapacityTypeReserved {
		return ec2types.DefaultTargetCapacityType(pl.CapacityType)
	}
	for _, o := range pl.Options {
		if o.Reservation != nil && o.Reservation.Type == awsv1.CapacityReservationTypeCapacityBlock {
			return ec2types.DefaultTargetCapacityTypeCapacityBlock
		}
	}
	return ec2types.DefaultTargetCapacityTypeOnDemand
}
