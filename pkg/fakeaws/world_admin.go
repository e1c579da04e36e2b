package fakeaws

import (
	"sort"
	"time"
)

// SetCapacity sets a pool's spare capacity (creating the pool if the type is known).
func (w *World) SetCapacity(instanceType, zone, capacityType string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.poolLocked(instanceType, zone, capacityType); p != nil {
		p.Spare = n
	}
}

// SetPrice sets a pool's hourly price.
func (w *World) SetPrice(instanceType, zone, capacityType string, price float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.poolLocked(instanceType, zone, capacityType); p != nil {
		p.Price = price
	}
}

// InjectICE makes a pool report InsufficientInstanceCapacity until the given time.
func (w *World) InjectICE(instanceType, zone, capacityType string, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.poolLocked(instanceType, zone, capacityType); p != nil {
		p.ICEUntil = until
	}
}

func (w *World) poolLocked(t, z, ct string) *Pool {
	k := PoolKey{t, z, ct}
	if p, ok := w.pools[k]; ok {
		return p
	}
	s, ok := w.specs[t]
	if !ok || !contains(w.opts.Zones, z) {
		return nil
	}
	price := s.OnDemandPrice
	if ct == CapacitySpot {
		price = s.SpotPrice
	}
	p := &Pool{PoolKey: k, Price: price}
	w.pools[k] = p
	return p
}

// InjectThrottle makes the next n calls of action ("*" for any) fail with RequestLimitExceeded.
func (w *World) InjectThrottle(action string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.throttle[action] += n
}

// InjectServerError makes the next n calls of action ("*" for any) fail with HTTP 500 InternalError.
func (w *World) InjectServerError(action string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures[action] += n
}

// SetLatency adds a real-time delay before every response.
func (w *World) SetLatency(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.latency = d
}

// Stats returns API call counts per action ("CreateFleet", "sqs:ReceiveMessage", …).
func (w *World) Stats() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.stats))
	for k, v := range w.stats {
		out[k] = v
	}
	return out
}

// admit counts a call and applies injected faults; it returns the fault code
// to answer with ("" to proceed) and the latency to add.
func (w *World) admit(action string) (fault string, latency time.Duration) {
	w.mu.Lock()
	defer w.unlock()
	w.stats[action]++
	w.tickLocked()
	for _, k := range []string{action, "*"} {
		if w.throttle[k] > 0 {
			w.throttle[k]--
			return "RequestLimitExceeded", w.latency
		}
		if w.failures[k] > 0 {
			w.failures[k]--
			return "InternalError", w.latency
		}
	}
	return "", w.latency
}

// Instances returns a snapshot of every instance the world still remembers,
// in launch order.
func (w *World) Instances() []Instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Instance, 0, len(w.instOrder))
	for _, id := range w.instOrder {
		out = append(out, w.instances[id].clone())
	}
	return out
}

// Instance returns one instance snapshot.
func (w *World) Instance(id string) (Instance, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in, ok := w.instances[id]
	if !ok {
		return Instance{}, false
	}
	return in.clone(), true
}

// Pools returns a snapshot of every capacity pool, sorted by key.
func (w *World) Pools() []Pool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Pool, 0, len(w.pools))
	for _, p := range w.pools {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].PoolKey, out[j].PoolKey
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

// SetBootDelay changes how long instances launched from now on stay pending.
func (w *World) SetBootDelay(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opts.BootDelay = d
}
