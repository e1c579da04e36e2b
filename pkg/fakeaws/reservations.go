package fakeaws

import (
	"fmt"
	"sort"
	"time"
)

// Capacity reservations (ODCRs and Capacity Blocks), as EC2 keeps them: a
// number of instances of one type in one zone set aside for the account.
// An instance launches into one when its launch template targets it
// (CapacityReservationSpecification.CapacityReservationTarget), or, for an
// open reservation, when an on-demand launch of its type and zone that does
// not opt out (preference none) finds it with an instance free. The
// reservation's capacity is its own: a launch into it neither takes nor
// needs the zone's on-demand pool. Its available count goes down at launch
// and back when the instance has terminated. A Capacity Block's instances
// are terminated by EC2 30 minutes before the block ends; an ODCR's simply
// run on as on-demand after it ends or is cancelled, DescribeInstances no
// longer naming the reservation. An interruptible reservation's owner may
// take capacity back (ReclaimInterruptible): its instances get a two-minute
// warning on the interruption queue and are terminated.

// Reservation types and instance match criteria (EC2 spellings).
const (
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
	MatchOpen                    = "open"
	MatchTargeted                = "targeted"
)

// CapacityBlockReclaim is how long before a Capacity Block's end EC2
// terminates its instances.
const CapacityBlockReclaim = 30 * time.Minute

// CapacityReservation is a simulated capacity reservation.
type CapacityReservation struct {
	ID            string
	OwnerID       string // default: the world's account
	InstanceType  string
	Zone          string
	Type          string // ReservationTypeDefault (default) or ReservationTypeCapacityBlock
	MatchCriteria string // MatchOpen (default) or MatchTargeted
	Total         int
	Start         time.Time // zero: the world's time at creation
	End           time.Time // zero: no end date
	Tags          map[string]string
	Cancelled     bool
	// Interruptible: the owner may reclaim the capacity
	// (ReclaimInterruptible); EC2 warns the instances in it two minutes
	// before terminating them.
	Interruptible bool

	// Available is filled on read: Total less the instances in it that
	// have not terminated; 0 once it is no longer active.
	Available int
	// State is filled on read: scheduled, active, expired or cancelled.
	State string
}

// AddCapacityReservation creates a reservation and returns its id. A
// Capacity Block's instances are reclaimed CapacityBlockReclaim before its end.
func (w *World) AddCapacityReservation(cr CapacityReservation) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.specs[cr.InstanceType]; !ok {
		return "", apiErr(400, "InvalidParameterValue", "Invalid value '%s' for InstanceType.", cr.InstanceType)
	}
	if !contains(w.opts.Zones, cr.Zone) {
		return "", apiErr(400, "InvalidParameterValue", "Invalid availability zone: [%s]", cr.Zone)
	}
	if w.pools[PoolKey{cr.InstanceType, cr.Zone, CapacityOnDemand}] == nil {
		return "", apiErr(400, "Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", cr.InstanceType, cr.Zone)
	}
	if cr.Total < 1 {
		return "", apiErr(400, "InvalidParameterValue", "InstanceCount must be at least 1")
	}
	if cr.Type == "" {
		cr.Type = ReservationTypeDefault
	}
	if cr.MatchCriteria == "" {
		cr.MatchCriteria = MatchOpen
	}
	if cr.Type == ReservationTypeCapacityBlock {
		if cr.End.IsZero() {
			return "", apiErr(400, "InvalidParameterValue", "a Capacity Block needs an end date")
		}
		cr.MatchCriteria = MatchTargeted // Capacity Blocks are always targeted
	}
	if cr.OwnerID == "" {
		cr.OwnerID = w.opts.AccountID
	}
	if cr.Start.IsZero() {
		cr.Start = w.clock.Now()
	}
	if cr.ID == "" {
		cr.ID = w.newID("cr")
	}
	if _, dup := w.reservations[cr.ID]; dup {
		return "", apiErr(400, "InvalidParameterValue", "capacity reservation %s exists", cr.ID)
	}
	cr.Tags = cloneTags(cr.Tags)
	c := cr
	w.reservations[c.ID] = &c
	w.resOrder = append(w.resOrder, c.ID)
	if c.Type == ReservationTypeCapacityBlock {
		w.schedule(c.End.Add(-CapacityBlockReclaim), timerReclaim, c.ID)
	}
	return c.ID, nil
}

// ReclaimInterruptible takes n instances of capacity back from the
// interruptible reservation id, as its owner does: the reservation shrinks
// by n, and the first n of its running instances (by id) get EC2's
// "EC2 Capacity Reservation Instance Interruption Warning" now and are
// terminated InterruptionNotice (two minutes) later, at the warning's
// instance-termination-time. It returns the instances warned.
func (w *World) ReclaimInterruptible(id string, n int) ([]string, error) {
	w.mu.Lock()
	defer w.unlock()
	w.tickLocked()
	cr, ok := w.reservations[id]
	if !ok {
		return nil, apiErr(400, "InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
	}
	if !cr.Interruptible {
		return nil, apiErr(400, "InvalidParameterValue", "capacity reservation %s is not interruptible", id)
	}
	if n < 1 || n > cr.Total {
		return nil, apiErr(400, "InvalidParameterValue", "cannot reclaim %d of the %d instances of %s", n, cr.Total, id)
	}
	cr.Total -= n
	var ids []string
	for _, in := range w.instances {
		if in.CapacityReservationID == id && (in.State == StateRunning || in.State == StatePending) && in.InterruptAt.IsZero() {
			ids = append(ids, in.ID)
		}
	}
	sort.Strings(ids)
	ids = ids[:min(n, len(ids))]
	now := w.clock.Now()
	end := now.Add(InterruptionNotice)
	for _, iid := range ids {
		in := w.instances[iid]
		w.publish("EC2 Capacity Reservation Instance Interruption Warning", "aws.ec2", []string{w.instanceARN(in)},
			map[string]string{"instance-id": in.ID, "instance-action": "terminate",
				"instance-termination-time": end.UTC().Format(time.RFC3339), "azId": w.zoneID(in.Zone)}, now)
		in.InterruptAt = end
		w.schedule(end, timerInterrupt, in.ID)
		w.emit(EventInterrupted, in)
	}
	return ids, nil
}

// CancelCapacityReservation cancels a reservation: it takes no more
// launches; its instances run on as on-demand.
func (w *World) CancelCapacityReservation(id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	cr, ok := w.reservations[id]
	if !ok {
		return apiErr(400, "InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
	}
	cr.Cancelled = true
	return nil
}

// CapacityReservations returns every reservation, with its state and
// available count at the world's time, in creation order.
func (w *World) CapacityReservations() []CapacityReservation {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tickLocked()
	return w.reservationsLocked(w.clock.Now())
}

func (w *World) reservationsLocked(now time.Time) []CapacityReservation {
	out := make([]CapacityReservation, 0, len(w.resOrder))
	for _, id := range w.resOrder {
		out = append(out, w.readReservation(w.reservations[id], now))
	}
	return out
}

// readReservation is cr with its state and available count filled.
func (w *World) readReservation(cr *CapacityReservation, now time.Time) CapacityReservation {
	c := *cr
	c.Tags = cloneTags(cr.Tags)
	switch {
	case cr.Cancelled:
		c.State = "cancelled"
	case now.Before(cr.Start):
		c.State = "scheduled"
	case !cr.End.IsZero() && !now.Before(cr.End):
		c.State = "expired"
	default:
		c.State = "active"
	}
	if c.State == "active" {
		c.Available = max(0, cr.Total-w.reservationUseLocked(cr.ID))
	}
	return c
}

// reservationUseLocked counts the instances in reservation id that have not
// terminated.
func (w *World) reservationUseLocked(id string) int {
	n := 0
	for _, in := range w.instances {
		if in.CapacityReservationID == id && in.State != StateTerminated {
			n++
		}
	}
	return n
}

// reservationFor decides the reservation an on-demand (or capacity-block)
// launch of type t in zone goes into: the template's target, which must be
// active, of that type and zone and have an instance free (else an error
// code and message, as EC2 answers), or, when the template does not opt
// out, the first active open reservation of that type and zone with an
// instance free. "" when none.
func (w *World) reservationFor(lt *LaunchTemplate, t, zone string, used map[string]int, now time.Time) (string, string, string) {
	const spec = "CapacityReservationSpecification."
	if id := lt.Data[spec+"CapacityReservationTarget.CapacityReservationId"]; id != "" {
		cr, ok := w.reservations[id]
		if !ok {
			return "", "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)
		}
		r := w.readReservation(cr, now)
		if r.State != "active" {
			return "", "InvalidCapacityReservationId.Unavailable", fmt.Sprintf("The capacity reservation '%s' is %s.", id, r.State)
		}
		if r.InstanceType != t || r.Zone != zone {
			return "", "InvalidParameterCombination", fmt.Sprintf("The instance type %s in %s does not match the capacity reservation '%s' (%s in %s).", t, zone, id, r.InstanceType, r.Zone)
		}
		if r.Available-used[id] <= 0 {
			return "", "ReservationCapacityExceeded", fmt.Sprintf("The requested number of instances exceeds the available capacity of the capacity reservation '%s'.", id)
		}
		return id, "", ""
	}
	if lt.Data[spec+"CapacityReservationPreference"] == "none" {
		return "", "", ""
	}
	for _, id := range w.resOrder {
		cr := w.reservations[id]
		if cr.MatchCriteria != MatchOpen || cr.InstanceType != t || cr.Zone != zone {
			continue
		}
		if r := w.readReservation(cr, now); r.State == "active" && r.Available-used[id] > 0 {
			return id, "", ""
		}
	}
	return "", "", ""
}

// reclaimBlock terminates the instances of Capacity Block id (its end less
// CapacityBlockReclaim has come).
func (w *World) reclaimBlock(id string, at time.Time) {
	ids := make([]string, 0)
	for _, in := range w.instances {
		if in.CapacityReservationID == id && live(*in) {
			ids = append(ids, in.ID)
		}
	}
	sort.Strings(ids)
	for _, iid := range ids {
		w.beginTerminate(w.instances[iid], at)
	}
}
