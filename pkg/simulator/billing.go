package simulator

import (
	"sort"
	"strings"
	"time"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// billing follows every instance from launch to termination as AWS bills
// it (from launch until it starts shutting down, at the price of its pool,
// price changes included), and ties it to the NodeClaim it was launched for.
type billing struct {
	s         *Sim
	instances map[string]*bill // by instance ID
	order     []*bill
	byClaim   map[string]*bill
	// claimOf maps instances to claims seen on the claims' status before
	// the instance's launch event was handled.
	claimOf map[string]string
	// reasons are why each claim was deleted, from the controllers' Events.
	reasons map[string]string
	systems []*systemBill
}

type bill struct {
	id        string
	launch    output.Launch
	price     float64
	since     time.Duration
	cost      float64
	stopped   bool
	shutdown  bool // terminated, not only shutting down
	claim     string
	interrupt bool
	reserved  bool // launched into a capacity reservation: no price of its own
}

type systemBill struct {
	name         string
	price        float64
	capacityType string
}

func newBilling(s *Sim) *billing {
	return &billing{s: s, instances: map[string]*bill{}, byClaim: map[string]*bill{}, claimOf: map[string]string{}, reasons: map[string]string{}}
}

func (b *billing) system(name, capacityType string, price float64) {
	b.systems = append(b.systems, &systemBill{name: name, price: price, capacityType: capacityType})
}

// reasonText turns the Event reason that preceded a claim's deletion into
// the report's words.
var reasonText = map[string]string{
	"Empty":                   "empty",
	"Underutilized":           "underutilized",
	"Drifted":                 "drifted",
	"Expired":                 "expired",
	"ReturnToSpot":            "returned to spot",
	"LivenessTimeout":         "registration timeout",
	"InsufficientCapacity":    "insufficient capacity",
	"SpotInterruption":        "spot interruption",
	"RebalanceRecommendation": "rebalance recommendation",
	"ScheduledChange":         "scheduled maintenance",
	"InstanceStopping":        "instance stopping",
}

func describeReason(r string) string {
	if t, ok := reasonText[r]; ok {
		return t
	}
	return strings.ToLower(r)
}

// launched starts the bill of a new instance.
func (b *billing) launched(in fakeaws.Instance) {
	if _, ok := b.instances[in.ID]; ok {
		return
	}
	it, _ := b.s.catalog.Get(in.Type)
	od := 0.0
	if it != nil {
		od = it.OnDemandPrice
	}
	ct := nsv1.CapacityTypeOnDemand
	if in.CapacityType == fakeaws.CapacitySpot {
		ct = nsv1.CapacityTypeSpot
	}
	price := in.Price
	if in.CapacityReservationID != "" {
		// The reservation is paid whether used or not (Result.ReservationCost):
		// an instance in it costs nothing more.
		ct, price = nsv1.CapacityTypeReserved, 0
	}
	bl := &bill{id: in.ID, price: price, since: b.s.now, reserved: in.CapacityReservationID != "", launch: output.Launch{
		InstanceType: in.Type, Zone: in.Zone, CapacityType: ct, Price: price, OnDemandPrice: od, LaunchedAt: b.s.now,
		Pool: in.Tags[awsv1.TagNodePool], NodeClaim: in.Tags[awsv1.TagNodeClaim],
	}}
	b.instances[in.ID] = bl
	b.order = append(b.order, bl)
	if c := b.claimOf[in.ID]; c != "" && bl.launch.NodeClaim == "" {
		bl.launch.NodeClaim = c
	}
	if bl.launch.NodeClaim != "" {
		bl.claim = bl.launch.NodeClaim
		b.byClaim[bl.claim] = bl
	}
}

// accrue brings an instance's cost up to now at its current price.
func (b *billing) accrue(bl *bill) {
	if !bl.stopped {
		bl.cost += bl.price * (b.s.now - bl.since).Hours()
		b.s.hours.accrue(bl.price, bl.since, b.s.now)
	}
	bl.since = b.s.now
}

// stopping ends billing: the instance began to shut down.
func (b *billing) stopping(in fakeaws.Instance) {
	bl := b.instances[in.ID]
	if bl == nil || bl.stopped {
		return
	}
	b.accrue(bl)
	bl.stopped = true
	bl.launch.TerminatedAt, bl.launch.Terminated = b.s.now, true
	if bl.launch.Reason == "" {
		switch {
		case !in.InterruptAt.IsZero():
			bl.launch.Reason = "spot interruption"
		case b.s.recorder.decision[bl.claim] != "":
			bl.launch.Reason = describeReason(b.s.recorder.decision[bl.claim])
		case b.reasons[bl.claim] != "":
			bl.launch.Reason = describeReason(b.reasons[bl.claim])
		default:
			bl.launch.Reason = "terminated"
		}
	}
}

func (b *billing) terminated(in fakeaws.Instance) {
	b.stopping(in)
	if bl := b.instances[in.ID]; bl != nil {
		bl.shutdown = true
	}
}

// repriced changes the price of the instances of a pool.
func (b *billing) repriced(match func(*bill) bool, price float64) {
	for _, bl := range b.order {
		if !bl.stopped && !bl.reserved && match(bl) {
			b.accrue(bl)
			bl.price = price
		}
	}
}

// claimChanged ties instances to their claims (a merged CreateFleet tags
// them after launch) and remembers why a claim is being deleted.
func (b *billing) claimChanged(ch apiserver.Change) {
	c, _ := ch.Object().(*nsv1.NodeClaim)
	if c == nil {
		return
	}
	if id := instanceID(c.Status.ProviderID); id != "" {
		b.claimOf[id] = c.Name
		if bl := b.instances[id]; bl != nil && bl.claim == "" {
			bl.claim = c.Name
			bl.launch.NodeClaim = c.Name
			bl.launch.Pool = c.Labels[nsv1.LabelNodePool]
			b.byClaim[c.Name] = bl
		}
	}
	if ch.Old != nil && ch.Old.GetDeletionTimestamp() == nil && c.DeletionTimestamp != nil && b.reasons[c.Name] == "" {
		b.reasons[c.Name] = "deleted" // unless a controller's decision says why (see stopping)
	}
}

// live counts instances not yet terminated, by capacity type, and the
// price per hour of those still billed.
func (b *billing) live() (spot, onDemand int, perHour float64) {
	for _, bl := range b.order {
		if bl.shutdown {
			continue
		}
		if bl.launch.CapacityType == nsv1.CapacityTypeSpot {
			spot++
		} else {
			onDemand++
		}
		if !bl.stopped {
			perHour += bl.price
		}
	}
	for _, sb := range b.systems {
		perHour += sb.price
		if sb.capacityType == nsv1.CapacityTypeSpot {
			spot++
		} else {
			onDemand++
		}
	}
	return spot, onDemand, perHour
}

// alive reports whether any instance of Nodesmith's is still billed.
func (b *billing) alive() bool {
	for _, bl := range b.order {
		if !bl.shutdown {
			return true
		}
	}
	return false
}

// launches closes the bills at the end of the run.
func (b *billing) launches() (out []output.Launch, cost, onDemand, system float64) {
	for _, bl := range b.order {
		b.accrue(bl)
		l := bl.launch
		l.Cost = bl.cost
		if !bl.stopped {
			l.TerminatedAt = b.s.now
		}
		out = append(out, l)
		cost += l.Cost
		onDemand += l.OnDemandPrice * l.Hours()
	}
	for _, sb := range b.systems {
		system += sb.price * b.s.now.Hours()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LaunchedAt < out[j].LaunchedAt })
	return out, cost, onDemand, system
}

// instanceID is the last segment of an aws:///zone/i-… provider ID.
func instanceID(providerID string) string {
	if providerID == "" {
		return ""
	}
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

// reservationCost is what the scenario's capacity reservations cost over
// the run so far: each instance they hold, used or not, at its type's
// on-demand price, from the start until the reservation ends.
func (b *billing) reservationCost() float64 {
	total := 0.0
	for _, cr := range b.s.sc.World.CapacityReservations {
		it, _ := b.s.catalog.Get(cr.InstanceType)
		if it == nil {
			continue
		}
		held := b.s.now
		if e := cr.Ends.Duration; e > 0 && e < held {
			held = e
		}
		total += float64(cr.Count) * it.OnDemandPrice * held.Hours()
	}
	return total
}
