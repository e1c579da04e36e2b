package catalog

import (
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Spot interruption risk, in percent of instances interrupted per month.
//
// A spot offering's risk is its instance type's Spot Instance Advisor range
// rated at the range's middle (2.5 for <5%, 7.5, 12.5, 17.5, and 25 for
// >20%; UnknownSpotRisk when the advisor has no entry), plus
// ObservedInterruptionRisk for every interruption of that type in that zone
// seen by the interruption handler, halving every ObservedRiskHalfLife. The
// launch path drops spot offerings above a NodePool's ceiling
// (maxSpotInterruptionRisk) and tries the rest in order of price × risk.
const (
	// UnknownSpotRisk rates a type the advisor has no entry for as the middle range.
	UnknownSpotRisk = 12.5
	// ObservedInterruptionRisk is what one observed interruption adds to
	// its offering's risk: a pool that just reclaimed one of our instances
	// is likely reclaiming more.
	ObservedInterruptionRisk = 10.0
	// ObservedRiskHalfLife is how fast an observed interruption is forgotten.
	ObservedRiskHalfLife = 2 * time.Hour
	// MaxSpotRisk caps a risk (a percentage).
	MaxSpotRisk = 100.0
)

// advisorRisk rates the advisor's ranges, by label and by index.
var advisorRisk = map[string]float64{"<5%": 2.5, "5-10%": 7.5, "10-15%": 12.5, "15-20%": 17.5, ">20%": 25}

// AdvisorRisk is the risk rating of a Spot Instance Advisor range label
// ("<5%" … ">20%"); UnknownSpotRisk for an empty or unknown label.
func AdvisorRisk(bucket string) float64 {
	if r, ok := advisorRisk[bucket]; ok {
		return r
	}
	return UnknownSpotRisk
}

// InterruptionHistory remembers the spot interruptions the controller has
// seen, per (instance type, zone), as a score that halves every
// ObservedRiskHalfLife. Safe for concurrent use; a nil history has seen nothing.
type InterruptionHistory struct {
	clk      clock.PassiveClock
	halfLife time.Duration

	mu     sync.Mutex
	scores map[poolKey]decayed
}

type poolKey struct{ instanceType, zone string }

type decayed struct {
	score float64
	at    time.Time
}

// NewInterruptionHistory returns an empty history; halfLife ≤ 0 means ObservedRiskHalfLife.
func NewInterruptionHistory(clk clock.PassiveClock, halfLife time.Duration) *InterruptionHistory {
	if halfLife <= 0 {
		halfLife = ObservedRiskHalfLife
	}
	return &InterruptionHistory{clk: clk, halfLife: halfLife, scores: map[poolKey]decayed{}}
}

// Record notes one interruption of instanceType in zone now.
func (h *InterruptionHistory) Record(instanceType, zone string) {
	now := h.clk.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	k := poolKey{instanceType, zone}
	h.scores[k] = decayed{score: h.scoreLocked(k, now) + ObservedInterruptionRisk, at: now}
	// Forget pools whose score has decayed to nothing, so the map stays small.
	for key, d := range h.scores {
		if h.decay(d, now) < 0.01 {
			delete(h.scores, key)
		}
	}
}

// Observed is the decayed risk the recorded interruptions add to
// (instanceType, zone) now.
func (h *InterruptionHistory) Observed(instanceType, zone string) float64 {
	if h == nil {
		return 0
	}
	now := h.clk.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.scoreLocked(poolKey{instanceType, zone}, now)
}

func (h *InterruptionHistory) scoreLocked(k poolKey, now time.Time) float64 {
	d, ok := h.scores[k]
	if !ok {
		return 0
	}
	return h.decay(d, now)
}

func (h *InterruptionHistory) decay(d decayed, now time.Time) float64 {
	age := now.Sub(d.at)
	if age <= 0 {
		return d.score
	}
	return d.score * math.Exp2(-float64(age)/float64(h.halfLife))
}

// SpotRisk is the risk of buying it as spot in zone now.
func SpotRisk(it *InstanceType, zone string, h *InterruptionHistory) float64 {
	return math.Min(MaxSpotRisk, AdvisorRisk(it.SpotInterruptionBucket)+h.Observed(it.Name, zone))
}

// WithSpotRisk returns types whose spot offerings carry their risk
// (Offering.InterruptionRisk) and, when ceiling is set, are marked
// unavailable above it. Types whose offerings change are copied; the others
// are returned as they are, and the input is not modified.
func WithSpotRisk(types []*InstanceType, h *InterruptionHistory, ceiling *int32) []*InstanceType {
	out := make([]*InstanceType, len(types))
	for i, it := range types {
		var offs Offerings
		for j, o := range it.Offerings {
			if o.CapacityType != nsv1.CapacityTypeSpot {
				continue
			}
			r := SpotRisk(it, o.Zone, h)
			over := ceiling != nil && r > float64(*ceiling)
			if o.InterruptionRisk == r && (!over || !o.Available) {
				continue
			}
			if offs == nil {
				offs = append(Offerings(nil), it.Offerings...)
			}
			offs[j].InterruptionRisk = r
			if over {
				offs[j].Available = false
			}
		}
		if offs == nil {
			out[i] = it
			continue
		}
		out[i] = it.withOfferings(offs)
	}
	return out
}
