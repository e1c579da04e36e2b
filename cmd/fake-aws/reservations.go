package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// reservationFlags is the repeatable --capacity-reservation flag: one
// capacity reservation per use, as comma-separated key=value pairs:
// type, zone and count (required), id, match (open|targeted), kind
// (default|capacity-block), end (RFC 3339), owner, and tag.<key>=<value>.
type reservationFlags []fakeaws.CapacityReservation

func (r *reservationFlags) String() string { return fmt.Sprintf("%d reservations", len(*r)) }

func (r *reservationFlags) Set(v string) error {
	var cr fakeaws.CapacityReservation
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("capacity reservation %q: %q is not key=value", v, kv)
		}
		switch {
		case k == "type":
			cr.InstanceType = val
		case k == "zone":
			cr.Zone = val
		case k == "count":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return fmt.Errorf("capacity reservation %q: count %q is not a positive integer", v, val)
			}
			cr.Total = n
		case k == "id":
			cr.ID = val
		case k == "match":
			if val != fakeaws.MatchOpen && val != fakeaws.MatchTargeted {
				return fmt.Errorf("capacity reservation %q: match %q is not open or targeted", v, val)
			}
			cr.MatchCriteria = val
		case k == "kind":
			if val != fakeaws.ReservationTypeDefault && val != fakeaws.ReservationTypeCapacityBlock {
				return fmt.Errorf("capacity reservation %q: kind %q is not default or capacity-block", v, val)
			}
			cr.Type = val
		case k == "end":
			t, err := time.Parse(time.RFC3339, val)
			if err != nil {
				return fmt.Errorf("capacity reservation %q: end %q is not RFC 3339", v, val)
			}
			cr.End = t
		case k == "owner":
			cr.OwnerID = val
		case k == "interruptible":
			b, err := strconv.ParseBool(val)
			if err != nil {
				return fmt.Errorf("capacity reservation %q: interruptible %q is not true or false", v, val)
			}
			cr.Interruptible = b
		case strings.HasPrefix(k, "tag."):
			if cr.Tags == nil {
				cr.Tags = map[string]string{}
			}
			cr.Tags[strings.TrimPrefix(k, "tag.")] = val
		default:
			return fmt.Errorf("capacity reservation %q: unknown key %q (type, zone, count, id, match, kind, end, owner, interruptible, tag.<key>)", v, k)
		}
	}
	if cr.InstanceType == "" || cr.Zone == "" || cr.Total == 0 {
		return fmt.Errorf("capacity reservation %q: type, zone and count are required", v)
	}
	*r = append(*r, cr)
	return nil
}

// apply creates the reservations in w.
func (r reservationFlags) apply(w *fakeaws.World) error {
	for _, cr := range r {
		if _, err := w.AddCapacityReservation(cr); err != nil {
			return fmt.Errorf("capacity reservation of %s in %s: %w", cr.InstanceType, cr.Zone, err)
		}
	}
	return nil
}
