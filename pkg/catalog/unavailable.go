package catalog

import (
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultUnavailableTTL is how long an offering stays marked out of
// capacity: long enough for the next provisioning loop to pick something
// else, short enough to retry the cheap offering soon after.
const DefaultUnavailableTTL = 3 * time.Minute

// UnavailableOfferings remembers offerings that recently failed for lack of
// capacity (an ICE from a launch, or a spot interruption), each for a TTL.
// Safe for concurrent use.
type UnavailableOfferings struct {
	clk clock.Clock
	ttl time.Duration

	mu      sync.RWMutex
	entries map[offeringKey]UnavailableEntry
	seq     uint64
}

type offeringKey struct{ instanceType, zone, capacityType string }

// anyValue in a key matches every instance type or zone (used to mark a
// whole capacity type unavailable).
const anyValue = "*"

// UnavailableEntry is one marked offering.
type UnavailableEntry struct {
	InstanceType, Zone, CapacityType string
	Reason                           string
	Expires                          time.Time
}

// NewUnavailableOfferings returns an empty cache; ttl ≤ 0 means DefaultUnavailableTTL.
func NewUnavailableOfferings(clk clock.Clock, ttl time.Duration) *UnavailableOfferings {
	if ttl <= 0 {
		ttl = DefaultUnavailableTTL
	}
	return &UnavailableOfferings{clk: clk, ttl: ttl, entries: map[offeringKey]UnavailableEntry{}}
}

// MarkUnavailable hides (instanceType, zone, capacityType) for the TTL,
// restarting the TTL if it is already hidden.
func (u *UnavailableOfferings) MarkUnavailable(instanceType, zone, capacityType, reason string) {
	u.mark(offeringKey{instanceType, zone, capacityType}, reason)
}

// MarkCapacityTypeUnavailable hides every offering of a capacity type for
// the TTL, e.g. all spot when the account cannot launch spot at all.
func (u *UnavailableOfferings) MarkCapacityTypeUnavailable(capacityType, reason string) {
	u.mark(offeringKey{anyValue, anyValue, capacityType}, reason)
}

func (u *UnavailableOfferings) mark(k offeringKey, reason string) {
	now := u.clk.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if e, ok := u.entries[k]; !ok || !now.Before(e.Expires) {
		u.seq++ // the set of hidden offerings changes
	}
	u.entries[k] = UnavailableEntry{
		InstanceType: k.instanceType, Zone: k.zone, CapacityType: k.capacityType,
		Reason: reason, Expires: now.Add(u.ttl),
	}
}

// IsUnavailable reports whether the offering is hidden right now.
func (u *UnavailableOfferings) IsUnavailable(instanceType, zone, capacityType string) bool {
	now := u.clk.Now()
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.hiddenLocked(now, offeringKey{instanceType, zone, capacityType})
}

func (u *UnavailableOfferings) hiddenLocked(now time.Time, k offeringKey) bool {
	if len(u.entries) == 0 {
		return false
	}
	for _, key := range []offeringKey{k, {anyValue, anyValue, k.capacityType}} {
		if e, ok := u.entries[key]; ok && now.Before(e.Expires) {
			return true
		}
	}
	return false
}

// SeqNum changes whenever the set of hidden offerings changes (an entry
// added, or one expired), so callers can cache views keyed by it.
func (u *UnavailableOfferings) SeqNum() uint64 {
	now := u.clk.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pruneLocked(now)
	return u.seq
}

// pruneLocked drops expired entries; each drop is a change in what is hidden.
func (u *UnavailableOfferings) pruneLocked(now time.Time) {
	for k, e := range u.entries {
		if !now.Before(e.Expires) {
			delete(u.entries, k)
			u.seq++
		}
	}
}

// Delete un-hides an offering at once (e.g. after a successful launch in it).
func (u *UnavailableOfferings) Delete(instanceType, zone, capacityType string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := offeringKey{instanceType, zone, capacityType}
	if _, ok := u.entries[k]; ok {
		delete(u.entries, k)
		u.seq++
	}
}

// Entries lists the hidden offerings, ordered by type, zone, capacity type;
// for events, metrics and debugging.
func (u *UnavailableOfferings) Entries() []UnavailableEntry {
	now := u.clk.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pruneLocked(now)
	out := make([]UnavailableEntry, 0, len(u.entries))
	for _, e := range u.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.InstanceType != b.InstanceType {
			return a.InstanceType < b.InstanceType
		}
		if a.Zone != b.Zone {
			return a.Zone < b.Zone
		}
		return a.CapacityType < b.CapacityType
	})
	return out
}

// WithAvailability returns copies of types whose offerings are marked
// unavailable where the cache hides them (offerings already unavailable
// stay so). The input is not modified; a nil cache returns copies as they are.
func WithAvailability(types []*InstanceType, u *UnavailableOfferings) []*InstanceType {
	out := make([]*InstanceType, len(types))
	if u == nil {
		for i, it := range types {
			out[i] = it.withOfferings(append(Offerings(nil), it.Offerings...))
		}
		return out
	}
	now := u.clk.Now()
	u.mu.RLock()
	defer u.mu.RUnlock()
	for i, it := range types {
		offs := make(Offerings, len(it.Offerings))
		for j, o := range it.Offerings {
			o.Available = o.Available && !u.hiddenLocked(now, offeringKey{it.Name, o.Zone, o.CapacityType})
			offs[j] = o
		}
		out[i] = it.withOfferings(offs)
	}
	return out
}
