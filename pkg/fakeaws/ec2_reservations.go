package fakeaws

import (
	"fmt"
)

// documentedReservationFilters are the DescribeCapacityReservations filter
// names of botocore 1.43's EC2 model, besides tag:<key>, tag-key and
// tag-value, all of which the fake answers.
var documentedReservationFilters = setOf(
	"instance-type", "owner-id", "instance-platform", "availability-zone", "tenancy", "outpost-arn",
	"state", "start-date", "end-date", "end-date-type", "instance-match-criteria", "placement-group-arn",
)

func (w *World) blockIDs() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for id, cr := range w.reservations {
		if cr.Type == ReservationTypeCapacityBlock {
			out[id] = true
		}
	}
	return out
}

// endedODCRs are the ids of the ODCRs (not Capacity Blocks) that have
// expired or been cancelled: EC2 takes their instances out of them, and the
// instances run on as plain on-demand ones without a capacityReservationId.
func (w *World) endedODCRs() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	now := w.clock.Now()
	for id, cr := range w.reservations {
		if cr.Type == ReservationTypeDefault {
			if st := w.readReservation(cr, now).State; st == "expired" || st == "cancelled" {
				out[id] = true
			}
		}
	}
	return out
}

func (s *Server) describeCapacityReservations(p params) (func(x *xmlw), error) {
	ids := p.list("CapacityReservationId")
	if err := reservationIDs.checkIDs(ids); err != nil {
		return nil, err
	}
	fs := p.filters()
	all := s.w.CapacityReservations()
	attrOf := func(cr CapacityReservation) attrFunc {
		return func(n string) ([]string, bool) { return reservationAttr(cr, n) }
	}
	if err := checkFilters(fs, attrOf(CapacityReservation{}), documentedReservationFilters); err != nil {
		return nil, err
	}
	if err := requireKnown(ids, len(all), func(i int) string { return all[i].ID }, "InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist"); err != nil {
		return nil, err
	}
	var out []CapacityReservation
	for _, cr := range all {
		if len(ids) > 0 && !contains(ids, cr.ID) {
			continue
		}
		ok, err := matchAll(fs, attrOf(cr), cr.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, cr)
		}
	}
	from, to, next, err := page(p, len(out), 0, 1, 1000)
	if err != nil {
		return nil, err
	}
	region, zoneID := s.w.opts.Region, s.w.zoneID
	return func(x *xmlw) {
		x.open("capacityReservationSet")
		for _, cr := range out[from:to] {
			x.open("item")
			x.leaf("capacityReservationId", cr.ID)
			x.leaf("ownerId", cr.OwnerID)
			x.leaf("capacityReservationArn", fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", region, cr.OwnerID, cr.ID))
			x.leaf("availabilityZoneId", zoneID(cr.Zone))
			x.leaf("instanceType", cr.InstanceType)
			x.leaf("instancePlatform", "Linux/UNIX")
			x.leaf("availabilityZone", cr.Zone)
			x.leaf("tenancy", "default")
			x.leafInt("totalInstanceCount", cr.Total)
			x.leafInt("availableInstanceCount", cr.Available)
			x.leafBool("ebsOptimized", true)
			x.leafBool("ephemeralStorage", false)
			x.leaf("state", cr.State)
			x.leafTime("startDate", cr.Start)
			if !cr.End.IsZero() {
				x.leafTime("endDate", cr.End)
			}
			x.leaf("endDateType", endDateType(cr))
			x.leaf("instanceMatchCriteria", cr.MatchCriteria)
			x.leafTime("createDate", cr.Start)
			if len(cr.Tags) > 0 {
				x.tagSet(cr.Tags)
			}
			x.leaf("reservationType", cr.Type)
			x.leafBool("interruptible", cr.Interruptible)
			x.close("item")
		}
		x.close("capacityReservationSet")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

// reservationAttr answers the filters from the values the answer renders.
func reservationAttr(cr CapacityReservation, n string) ([]string, bool) {
	switch n {
	case "instance-type":
		return []string{cr.InstanceType}, true
	case "owner-id":
		return []string{cr.OwnerID}, true
	case "instance-platform":
		return []string{"Linux/UNIX"}, true
	case "availability-zone":
		return []string{cr.Zone}, true
	case "tenancy":
		return []string{"default"}, true
	case "state":
		return []string{cr.State}, true
	case "start-date":
		return []string{ec2Time(cr.Start)}, true
	case "end-date":
		return one(endDate(cr)), true
	case "end-date-type":
		return []string{endDateType(cr)}, true
	case "instance-match-criteria":
		return []string{cr.MatchCriteria}, true
	case "outpost-arn", "placement-group-arn":
		return nil, true // the fake has neither: they match nothing
	}
	return nil, false
}

func endDate(cr CapacityReservation) string {
	if cr.End.IsZero() {
		return ""
	}
	return ec2Time(cr.End)
}

func endDateType(cr CapacityReservation) string {
	if cr.End.IsZero() {
		return "unlimited"
	}
	return "limited"
}
