package plan

import (
	"errors"
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// DefaultMaxOptions is the override limit of one CreateFleet call we keep to.
const DefaultMaxOptions = 60

// Subnet is a resolved subnet with the addresses it has left.
type Subnet struct {
	ID      string
	Zone    string
	FreeIPs int64
}

// Input is everything one launch decision needs.
type Input struct {
	// Requirements of the claim.
	Requirements []nsv1.NodeSelectorRequirementWithMinValues
	// Requests the node must have room for (allocatable ≥ requests).
	Requests corev1.ResourceList
	// InstanceTypes with offerings whose Available already reflects the ICE cache.
	InstanceTypes []*catalog.InstanceType
	// Subnets the node class resolved to; one per zone is used.
	Subnets []Subnet
	// MaxOptions caps the options; 0 means DefaultMaxOptions.
	MaxOptions int
	// AvoidSpot picks on-demand whenever it has options: the caller's last
	// launch attempt after spot attempts failed, so a claim is not stuck
	// walking a long list of spot pools 60 at a time.
	AvoidSpot bool
}

// Option is one (type, zone, subnet) override at a price.
type Option struct {
	InstanceType *catalog.InstanceType
	Zone         string
	SubnetID     string
	Price        float64
	// Risk is the offering's spot interruption risk (catalog.SpotRisk),
	// zero when not rated and for on-demand.
	Risk float64
	// Reservation is the capacity reservation a reserved option launches into.
	Reservation *catalog.ReservationRef
}

// RiskWeight scales an option's interruption risk into its ordering cost:
// price × (1 + risk/RiskWeight), so a pool rated 25 (>20% interrupted a
// month) is weighed at twice its price and one rated 2.5 (<5%) at 1.1×.
const RiskWeight = 25.0

// Cost orders options: the price weighted by the spot interruption risk
// (see RiskWeight), so of two pools at about the same price the calmer one
// comes first and is kept when the list is cut to the override limit; the
// plain price for unrated and on-demand options.
func (o Option) Cost() float64 { return o.Price * (1 + o.Risk/RiskWeight) }

// Plan is what to ask EC2 for.
type Plan struct {
	CapacityType string
	// Options cheapest first, at most MaxOptions.
	Options []Option
	// Note explains a choice a user may question (on-demand although spot
	// was allowed); empty otherwise.
	Note string
}

// ErrNoOptions means no offering satisfies the claim right now.
var ErrNoOptions = errors.New("no instance type offering satisfies the claim's requirements and resources")

// checkMinValues enforces requirements' minValues on the options sent:
// a pool that asks for spread across, say, 5 instance types must not be
// launched from a list the price cut narrowed to fewer.
func checkMinValues(reqs []nsv1.NodeSelectorRequirementWithMinValues, opts []Option) error {
	for _, r := range reqs {
		if r.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		for _, o := range opts {
			if v, ok := offeringLabels(o.InstanceType, catalog.Offering{Zone: o.Zone})(r.Key); ok {
				seen[v] = true
			}
		}
		if len(seen) < *r.MinValues {
			return fmt.Errorf("%w: %s needs %d distinct values, the options have %d", ErrNoOptions, r.Key, *r.MinValues, len(seen))
		}
	}
	return nil
}

// flexibilityThreshold: an on-demand fallback with fewer types than this is
// worth telling the user about (more types, more spot pools).
const flexibilityThreshold = 5

// Make picks the capacity type and options for one launch.
func Make(in Input) (Plan, error) {
	m, err := NewMatcher(in.Requirements)
	if err != nil {
		return Plan{}, err
	}
	subnets := SubnetPerZone(in.Subnets)
	defined := definedKeys(m.Keys(), in.InstanceTypes)
	type cand struct {
		it  *catalog.InstanceType
		off catalog.Offering
	}
	var cands []cand
	exoticOnly := true
	for _, it := range in.InstanceTypes {
		if !fits(it.Allocatable(), in.Requests) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || subnets[o.Zone] == "" || !m.MatchesFunc(offeringLabels(it, o), defined) {
				continue
			}
			cands = append(cands, cand{it, o})
			if !exotic(it) {
				exoticOnly = false
			}
		}
	}
	if len(cands) == 0 {
		return Plan{}, ErrNoOptions
	}
	// Exotic types are expensive: launched only when nothing else can serve the claim.
	cheapestOD := math.Inf(1)
	kept := cands[:0]
	for _, c := range cands {
		if !exoticOnly && exotic(c.it) {
			continue
		}
		kept = append(kept, c)
		if c.off.CapacityType == nsv1.CapacityTypeOnDemand {
			cheapestOD = math.Min(cheapestOD, c.off.Price)
		}
	}
	byCT := map[string][]Option{}
	for _, c := range kept {
		// A spot offering dearer than on-demand buys interruption risk for nothing.
		if c.off.CapacityType == nsv1.CapacityTypeSpot && c.off.Price > cheapestOD {
			continue
		}
		byCT[c.off.CapacityType] = append(byCT[c.off.CapacityType], Option{
			InstanceType: c.it, Zone: c.off.Zone, SubnetID: subnets[c.off.Zone], Price: c.off.Price, Risk: c.off.InterruptionRisk,
			Reservation: c.off.Reservation,
		})
	}
	p := Plan{CapacityType: nsv1.CapacityTypeSpot}
	switch {
	case len(byCT[nsv1.CapacityTypeReserved]) > 0:
		// Paid for already: a reservation the claim allows comes first.
		p.CapacityType = nsv1.CapacityTypeReserved
	case in.AvoidSpot && len(byCT[nsv1.CapacityTypeOnDemand]) > 0:
		p.CapacityType = nsv1.CapacityTypeOnDemand
		if len(byCT[nsv1.CapacityTypeSpot]) > 0 {
			p.Note = "spot launches failed for lack of capacity; launching on-demand"
		}
	case len(byCT[nsv1.CapacityTypeSpot]) == 0:
		p.CapacityType = nsv1.CapacityTypeOnDemand
		if m.Allows(nsv1.LabelCapacityType, nsv1.CapacityTypeSpot) {
			p.Note = "no spot offering is available for the claim; launching on-demand"
		}
	}
	opts := byCT[p.CapacityType]
	if len(opts) == 0 {
		return Plan{}, ErrNoOptions
	}
	sort.SliceStable(opts, func(i, j int) bool {
		if ci, cj := opts[i].Cost(), opts[j].Cost(); ci != cj {
			return ci < cj
		}
		if opts[i].Price != opts[j].Price {
			return opts[i].Price < opts[j].Price
		}
		if opts[i].InstanceType.Name != opts[j].InstanceType.Name {
			return opts[i].InstanceType.Name < opts[j].InstanceType.Name
		}
		if opts[i].Zone != opts[j].Zone {
			return opts[i].Zone < opts[j].Zone
		}
		return reservationID(opts[i]) < reservationID(opts[j])
	})
	max := in.MaxOptions
	if max <= 0 {
		max = DefaultMaxOptions
	}
	if len(opts) > max {
		opts = opts[:max]
	}
	p.Options = opts
	if err := checkMinValues(in.Requirements, opts); err != nil {
		return Plan{}, err
	}
	if p.Note != "" {
		if n := countTypes(opts); n < flexibilityThreshold {
			p.Note += fmt.Sprintf(" (only %d instance types are allowed; allow more for more spot pools)", n)
		}
	}
	return p, nil
}

// SubnetPerZone picks, per zone, the subnet with the most free addresses
// (ties to the lowest id, so the choice is stable).
func SubnetPerZone(subnets []Subnet) map[string]string {
	best := map[string]Subnet{}
	for _, s := range subnets {
		b, ok := best[s.Zone]
		if !ok || s.FreeIPs > b.FreeIPs || (s.FreeIPs == b.FreeIPs && s.ID < b.ID) {
			best[s.Zone] = s
		}
	}
	out := make(map[string]string, len(best))
	for z, s := range best {
		out[z] = s.ID
	}
	return out
}

func exotic(it *catalog.InstanceType) bool { return it.Exotic() }

func fits(allocatable, requests corev1.ResourceList) bool {
	for name, q := range requests {
		a, ok := allocatable[name]
		if !ok {
			if q.IsZero() {
				continue
			}
			return false
		}
		if a.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// definedKeys are the requirement keys some type or offering carries: the
// keys a requirement must be checked on.
func definedKeys(keys []string, types []*catalog.InstanceType) map[string]bool {
	out := map[string]bool{}
	for _, k := range keys {
		switch k {
		case corev1.LabelTopologyZone, nsv1.LabelCapacityType, corev1.LabelArchStable, corev1.LabelOSStable,
			corev1.LabelInstanceTypeStable, corev1.LabelTopologyRegion,
			awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible:
			out[k] = true
			continue
		}
		for _, it := range types {
			if _, ok := it.Labels[k]; ok {
				out[k] = true
				break
			}
		}
	}
	return out
}

func countTypes(opts []Option) int {
	seen := map[string]bool{}
	for _, o := range opts {
		seen[o.InstanceType.Name] = true
	}
	return len(seen)
}

// offeringLabels looks labels up as it.LabelsFor(o) would hold them.
func offeringLabels(it *catalog.InstanceType, o catalog.Offering) func(string) (string, bool) {
	return func(k string) (string, bool) {
		switch k {
		case corev1.LabelTopologyZone:
			return o.Zone, o.Zone != ""
		case nsv1.LabelCapacityType:
			return o.CapacityType, o.CapacityType != ""
		case awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible:
			v, ok := catalog.ReservationLabels(o.Reservation)[k]
			return v, ok
		}
		v, ok := it.Labels[k]
		return v, ok
	}
}

func reservationID(o Option) string {
	if o.Reservation == nil {
		return ""
	}
	return o.Reservation.ID
}
