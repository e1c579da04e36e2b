package fakeaws

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Options configure a World. Zero values get the defaults noted per field.
type Options struct {
	// Clock drives boot delays, interruption deadlines, visibility timeouts
	// and timestamps. Default: the real clock.
	Clock clock.WithTicker
	// Region, default us-east-1.
	Region string
	// AccountID, default 123456789012.
	AccountID string
	// Zones, default <region>a, <region>b, <region>c.
	Zones []string
	// Specs are the instance types the world sells. Default: DefaultSpecs().
	Specs []Spec
	// DefaultCapacity is each pool's spare capacity in instances. Default 1000.
	DefaultCapacity int
	// BootDelay is how long an instance stays pending. Zero means it is
	// running at the next Tick.
	BootDelay time.Duration
	// BootJitter adds to each instance's BootDelay a delay drawn uniformly
	// from [0, BootJitter) with the world's seeded generator: EC2 boots the
	// instances of one fleet request over tens of seconds, not at once.
	// Zero boots every instance after exactly BootDelay.
	BootJitter time.Duration
	// ShutdownDelay is how long an instance stays shutting-down. Default 0.
	ShutdownDelay time.Duration
	// TerminatedRetention is how long terminated instances stay visible to
	// DescribeInstances (EC2 keeps them about an hour). Default 1h.
	TerminatedRetention time.Duration
	// Seed makes ids deterministic.
	Seed int64
	// ClusterName pre-creates a VPC, one private subnet per zone and a
	// security group tagged nodesmith.sh/discovery=<ClusterName>.
	ClusterName string
	// KubernetesVersion names the EKS-optimized AMI parameters. Default 1.37.
	KubernetesVersion string
	// InterruptionQueue, when set, is created and receives the
	// EventBridge-shaped messages (spot warnings, rebalance, state changes, health).
	InterruptionQueue string
	// SpotVCPUQuota and OnDemandVCPUQuota cap running vCPUs per capacity type
	// (MaxSpotInstanceCountExceeded / VcpuLimitExceeded). Zero means unlimited.
	SpotVCPUQuota     int
	OnDemandVCPUQuota int
	// NoSpotServiceLinkedRole plays an account that never ran spot, whose
	// caller may not create the AWSServiceRoleForEC2Spot service-linked
	// role: the spot part of every CreateFleet fails with
	// AuthFailure.ServiceLinkedRoleCreationNotPermitted, as EC2 answers;
	// on-demand launches are unaffected.
	NoSpotServiceLinkedRole bool
	// Roles are IAM roles that exist from the start, for instance profiles
	// to hold. ClusterName also pre-creates NodeRoleName(ClusterName).
	Roles []string
	// EnforceInstanceProfiles makes CreateFleet fail an override whose
	// launch template names an instance profile IAM does not have
	// (InvalidParameterValue, as EC2 answers). Off by default, so worlds
	// that never create profiles still launch.
	EnforceInstanceProfiles bool
	// MaxLongPoll bounds, in real time, how long ReceiveMessage waits for a
	// message. Default: 20s with the real clock; 0 (return at once) with an
	// injected clock, because virtual time does not advance while a request
	// blocks. A negative value also means 0.
	MaxLongPoll *time.Duration
}

// World is the in-memory AWS: EC2 resources, capacity pools, SQS queues and
// SSM parameters. All methods are safe for concurrent use.
type World struct {
	mu      sync.Mutex
	opts    Options
	clock   clock.WithTicker
	rng     *rand.Rand
	realClk bool

	specs   map[string]Spec
	typeOrd []string
	pools   map[PoolKey]*Pool

	instances map[string]*Instance
	instOrder []string
	fleets    map[string]fleetRecord // by client token
	// nextFleetSweep is the fleets size that triggers the next expiry sweep.
	nextFleetSweep int
	templates      map[string]*LaunchTemplate
	ltOrder        []string
	// reservations are the capacity reservations by id (reservations.go).
	reservations map[string]*CapacityReservation
	resOrder     []string

	vpcs    []string
	subnets []*Subnet
	groups  []*SecurityGroup
	images  []*Image
	params  map[string]string
	queues  map[string]*queue
	// deletedQueues remembers when queues were deleted: SQS refuses the
	// name for 60 seconds after.
	deletedQueues map[string]time.Time
	timers        timerHeap
	// terminated counts remembered terminated instances, so the retention
	// sweep can skip the scan when there are none.
	terminated int
	ipSerial   int

	subs    []func(Event)
	pending []Event

	iam iamModel

	stats    map[string]int
	throttle map[string]int
	failures map[string]int
	latency  time.Duration
}

type timerKind int

const (
	timerBoot timerKind = iota
	timerInterrupt
	timerShutdown
	timerReclaim // a Capacity Block's instances are reclaimed (id: the reservation)
)

type timer struct {
	at   time.Time
	seq  uint64 // keeps timers due at the same instant in scheduling order
	kind timerKind
	id   string
}

// timerHeap is a min-heap of timers by (at, seq).
type timerHeap struct {
	items []timer
	seq   uint64
}

func (h *timerHeap) Len() int { return len(h.items) }
func (h *timerHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}
func (h *timerHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *timerHeap) Push(x any)    { h.items = append(h.items, x.(timer)) }
func (h *timerHeap) Pop() any {
	t := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return t
}

func (w *World) schedule(at time.Time, kind timerKind, id string) {
	w.timers.seq++
	heap.Push(&w.timers, timer{at: at, seq: w.timers.seq, kind: kind, id: id})
}

// NewWorld builds a world from options, pre-creating pools, zones, images,
// SSM parameters, the cluster network and the interruption queue.
func NewWorld(o Options) *World {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	_, real := o.Clock.(clock.RealClock)
	if _, ok := o.Clock.(*clock.RealClock); ok {
		real = true
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "123456789012"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{o.Region + "a", o.Region + "b", o.Region + "c"}
	}
	if len(o.Specs) == 0 {
		o.Specs = DefaultSpecs()
	}
	if o.DefaultCapacity <= 0 {
		o.DefaultCapacity = 1000
	}
	if o.TerminatedRetention <= 0 {
		o.TerminatedRetention = time.Hour
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = "1.37"
	}
	w := &World{
		opts:          o,
		clock:         o.Clock,
		realClk:       real,
		rng:           rand.New(rand.NewSource(o.Seed)),
		specs:         map[string]Spec{},
		pools:         map[PoolKey]*Pool{},
		instances:     map[string]*Instance{},
		fleets:        map[string]fleetRecord{},
		templates:     map[string]*LaunchTemplate{},
		reservations:  map[string]*CapacityReservation{},
		params:        map[string]string{},
		queues:        map[string]*queue{},
		deletedQueues: map[string]time.Time{},
		stats:         map[string]int{},
		throttle:      map[string]int{},
		failures:      map[string]int{},
	}
	for _, s := range o.Specs {
		w.addSpec(s)
	}
	w.seedImages()
	if o.ClusterName != "" {
		w.seedCluster(o.ClusterName)
	}
	w.seedIAM(o)
	if o.InterruptionQueue != "" {
		w.createQueueLocked(o.InterruptionQueue, nil)
	}
	return w
}

func (w *World) addSpec(s Spec) {
	if _, ok := w.specs[s.Name]; !ok {
		w.typeOrd = append(w.typeOrd, s.Name)
	}
	w.specs[s.Name] = s
	for zi, z := range w.opts.Zones {
		if len(s.Zones) > 0 && !contains(s.Zones, z) {
			continue
		}
		w.pools[PoolKey{s.Name, z, CapacityOnDemand}] = &Pool{PoolKey: PoolKey{s.Name, z, CapacityOnDemand}, Spare: w.opts.DefaultCapacity, Price: s.OnDemandPrice}
		if s.SpotUnsupported {
			continue
		}
		spot := s.SpotPrice
		if spot <= 0 {
			spot = s.OnDemandPrice * 0.4
		}
		// Zones differ by a few percent so that price-aware strategies have a
		// deterministic preference, as real spot markets do.
		spot = roundPrice(spot * (1 + 0.03*float64(zi%3) - 0.02*float64((zi+len(s.Name))%2)))
		if zp, ok := s.ZoneSpotPrices[z]; ok {
			spot = zp
		}
		w.pools[PoolKey{s.Name, z, CapacitySpot}] = &Pool{PoolKey: PoolKey{s.Name, z, CapacitySpot}, Spare: w.opts.DefaultCapacity, Price: spot}
	}
}

func roundPrice(p float64) float64 { return float64(int64(p*1e6+0.5)) / 1e6 }

// Options returns the effective options (defaults filled).
func (w *World) Options() Options { return w.opts }

// Now is the world clock's time.
func (w *World) Now() time.Time { return w.clock.Now() }

func (w *World) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[w.rng.Intn(16)]
	}
	return string(b)
}

func (w *World) newID(prefix string) string { return prefix + "-" + w.hex(17) }

func (w *World) uuid() string {
	h := w.hex(32)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Subscribe registers fn for instance events. Events are delivered
// synchronously, in order, after the world lock is released, so fn may call
// back into the world.
func (w *World) Subscribe(fn func(Event)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs = append(w.subs, fn)
}

func (w *World) emit(kind EventKind, in *Instance) {
	if len(w.subs) == 0 {
		return
	}
	w.pending = append(w.pending, Event{Kind: kind, Time: w.clock.Now(), Instance: in.clone()})
}

// unlock releases the world lock and then delivers queued events.
func (w *World) unlock() {
	evs := w.pending
	w.pending = nil
	subs := w.subs
	w.mu.Unlock()
	for _, e := range evs {
		for _, fn := range subs {
			fn(e)
		}
	}
}

// Tick processes every timer due at the clock's current time: boots
// (pending → running), interruption deadlines and shutdowns
// (shutting-down → terminated), and forgets long-terminated instances. Every
// API request calls it first, so a test only needs to step the clock.
func (w *World) Tick() {
	w.mu.Lock()
	w.tickLocked()
	w.unlock()
}

func (w *World) tickLocked() {
	now := w.clock.Now()
	for w.timers.Len() > 0 && !w.timers.items[0].at.After(now) {
		t := heap.Pop(&w.timers).(timer)
		if t.kind == timerReclaim {
			w.reclaimBlock(t.id, t.at)
			continue
		}
		in, ok := w.instances[t.id]
		if !ok {
			continue
		}
		switch t.kind {
		case timerBoot:
			if in.State == StatePending {
				w.setState(in, StateRunning, t.at)
				w.emit(EventRunning, in)
			}
		case timerInterrupt:
			w.beginTerminate(in, t.at)
		case timerShutdown:
			if in.State == StateShuttingDown {
				w.finishTerminate(in, t.at)
			}
		}
	}
	w.gcTerminated(now)
}

func (w *World) gcTerminated(now time.Time) {
	if w.terminated == 0 {
		return
	}
	keep := w.instOrder[:0]
	for _, id := range w.instOrder {
		in := w.instances[id]
		if in.State == StateTerminated && now.Sub(in.StateChangedAt) >= w.opts.TerminatedRetention {
			delete(w.instances, id)
			w.terminated--
			continue
		}
		keep = append(keep, id)
	}
	w.instOrder = keep
}

func (w *World) setState(in *Instance, state string, at time.Time) {
	in.State = state
	in.StateChangedAt = at
	w.publishStateChange(in, at)
}

// beginTerminate moves a live instance to shutting-down and schedules termination.
func (w *World) beginTerminate(in *Instance, at time.Time) {
	if in.State == StateShuttingDown || in.State == StateTerminated {
		return
	}
	w.setState(in, StateShuttingDown, at)
	w.emit(EventTerminating, in)
	if w.opts.ShutdownDelay <= 0 {
		w.finishTerminate(in, at)
		return
	}
	w.schedule(at.Add(w.opts.ShutdownDelay), timerShutdown, in.ID)
}

// finishTerminate marks the instance terminated and returns its capacity and IP.
func (w *World) finishTerminate(in *Instance, at time.Time) {
	w.setState(in, StateTerminated, at)
	w.terminated++
	if p := w.pools[PoolKey{in.Type, in.Zone, in.CapacityType}]; p != nil && in.CapacityReservationID == "" {
		p.Spare++
	}
	if s := w.subnet(in.SubnetID); s != nil {
		s.FreeIPs++
	}
	w.emit(EventTerminated, in)
}

// Run calls Tick on every interval of the world clock until ctx ends; it is
// the real-time driver used by cmd/fake-aws.
func (w *World) Run(ctx context.Context, interval time.Duration) {
	t := w.clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			w.Tick()
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func (w *World) subnet(id string) *Subnet {
	for _, s := range w.subnets {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// zoneID names a zone the way EC2 zone ids look ("use1-az1" for the first
// us-east-1 zone); real ids are shuffled per account, so any stable mapping will do.
func (w *World) zoneID(zone string) string {
	parts := strings.Split(w.opts.Region, "-")
	short := w.opts.Region
	if len(parts) == 3 && parts[1] != "" {
		short = parts[0] + parts[1][:1] + parts[2]
	}
	for i, z := range w.opts.Zones {
		if z == zone {
			return fmt.Sprintf("%s-az%d", short, i+1)
		}
	}
	return ""
}
