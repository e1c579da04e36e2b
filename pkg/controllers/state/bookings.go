package state

import "time"

// Bookings: the NodeClaims a Provisioned ProvisioningRequest launched (or
// found room on), kept for its pods until the booking window runs out.
// The provisioningrequest controller books them; the disruption planner
// does not disrupt a booked claim or node (disruption.Input.Booked).

type booking struct {
	targets []string
	until   time.Time
}

// Book keeps targets (claim and node names) for the request key until
// until; no targets forgets the request's booking.
func (c *Cluster) Book(key string, targets []string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bookings == nil {
		c.bookings = map[string]booking{}
	}
	if len(targets) == 0 {
		delete(c.bookings, key)
		return
	}
	c.bookings[key] = booking{targets: append([]string(nil), targets...), until: until}
}

// Booked reports whether a live booking holds target (a claim or node
// name).
func (c *Cluster) Booked(target string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	for _, b := range c.bookings {
		if !now.Before(b.until) {
			continue
		}
		for _, t := range b.targets {
			if t != "" && t == target {
				return true
			}
		}
	}
	return false
}

// BookingLive reports whether the request key ("namespace/name") holds a
// live booking.
func (c *Cluster) BookingLive(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.bookings[key]
	return ok && c.clk.Now().Before(b.until)
}
