package catalog

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/apis/v1alpha1"
)

// Commitments: Savings Plans and Reserved Instances. A commitment is an
// amount of on-demand spend per hour, at list price, that the account pays
// whether or not it is used. On-demand usage it covers is prepaid, so the
// marginal price of one more covered on-demand instance is zero while the
// commitment has dollars left this hour, and its list price (less what is
// left) once it is used up.
//
// Usage is charged as AWS applies discounts: commitments scoped to a family
// and region (Reserved Instances and EC2 Instance Savings Plans) first,
// then Compute Savings Plans, each group in name order. Usage is the
// on-demand list price of the running on-demand nodes (reserved and spot
// nodes are not covered), then the launches of the plan being built.
//
// Simplification, documented in docs/conformance.md: a commitment covers
// the list price, not the discounted rate a real Savings Plan applies, so
// "$2/h committed" means "$2/h of list-price on-demand usage is free".

// Commitment is a Commitment as the ledger charges it.
type Commitment struct {
	Name   string
	Type   string
	Family string // empty for a Compute Savings Plan
	Region string // empty for a Compute Savings Plan
	Hourly float64
}

// CommitmentFrom reads a Commitment; an error quotes the bad value.
func CommitmentFrom(c *v1alpha1.Commitment) (Commitment, error) {
	v, err := strconv.ParseFloat(c.Spec.HourlyCommitment, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return Commitment{}, fmt.Errorf("Commitment %s: hourlyCommitment %q: want a positive number of dollars per hour", c.Name, c.Spec.HourlyCommitment)
	}
	out := Commitment{Name: c.Name, Type: c.Spec.Type, Hourly: v}
	if c.Spec.Type != v1alpha1.CommitmentComputeSavingsPlan {
		if c.Spec.Family == "" || c.Spec.Region == "" {
			return Commitment{}, fmt.Errorf("Commitment %s: a %s needs family and region", c.Name, c.Spec.Type)
		}
		out.Family, out.Region = c.Spec.Family, c.Spec.Region
	}
	return out, nil
}

// CommitmentsFrom reads commitments, leaving out (and reporting) those
// that do not parse.
func CommitmentsFrom(cs []v1alpha1.Commitment) ([]Commitment, []error) {
	var out []Commitment
	var errs []error
	for i := range cs {
		c, err := CommitmentFrom(&cs[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	return out, errs
}

// Covers reports whether c covers on-demand usage of family in region.
func (c Commitment) Covers(family, region string) bool {
	return c.Family == "" || (c.Family == family && c.Region == region)
}

// Ledger counts, within one hour, what each commitment has left.
type Ledger struct {
	cs   []Commitment // charge order
	left []float64
}

// NewLedger is a ledger of cs with nothing charged.
func NewLedger(cs []Commitment) *Ledger {
	ord := append([]Commitment(nil), cs...)
	sort.SliceStable(ord, func(a, b int) bool {
		if (ord[a].Family == "") != (ord[b].Family == "") {
			return ord[a].Family != "" // scoped first
		}
		return ord[a].Name < ord[b].Name
	})
	l := &Ledger{cs: ord, left: make([]float64, len(ord))}
	for i, c := range ord {
		l.left[i] = c.Hourly
	}
	return l
}

// Empty reports whether the ledger has no commitment.
func (l *Ledger) Empty() bool { return l == nil || len(l.cs) == 0 }

// Left is what the commitments covering family in region have left.
func (l *Ledger) Left(family, region string) float64 {
	if l.Empty() {
		return 0
	}
	sum := 0.0
	for i, c := range l.cs {
		if c.Covers(family, region) {
			sum += l.left[i]
		}
	}
	return sum
}

// Marginal is the price of one more on-demand instance of family in region
// listed at price: zero while the covering commitments have price left,
// then what they do not cover.
func (l *Ledger) Marginal(family, region string, price float64) float64 {
	return math.Max(0, price-l.Left(family, region))
}

// Charge takes price of on-demand usage of family in region from the
// covering commitments, in charge order, and returns the part covered.
func (l *Ledger) Charge(family, region string, price float64) float64 {
	if l.Empty() {
		return 0
	}
	covered := 0.0
	for i, c := range l.cs {
		if price-covered <= 0 {
			break
		}
		if !c.Covers(family, region) || l.left[i] <= 0 {
			continue
		}
		take := math.Min(l.left[i], price-covered)
		l.left[i] -= take
		covered += take
	}
	return covered
}

// ChargeType charges one on-demand instance of it (list price
// OnDemandPrice, family and region from the type); the part covered.
// Other capacity types are not covered.
func (l *Ledger) ChargeType(it *InstanceType, capacityType string) float64 {
	if capacityType != nsv1.CapacityTypeOnDemand || it == nil {
		return 0
	}
	return l.Charge(it.Family, it.Region(), it.ListPrice())
}

// ListPrice is the type's on-demand list price: OnDemandPrice, or its
// dearest on-demand offering's when the type does not say.
func (it *InstanceType) ListPrice() float64 {
	price := it.OnDemandPrice
	if price <= 0 {
		for _, o := range it.Offerings {
			if o.CapacityType == nsv1.CapacityTypeOnDemand && o.Price > price {
				price = o.Price
			}
		}
	}
	return price
}

// Region is the type's region label.
func (it *InstanceType) Region() string { return it.Labels[corev1.LabelTopologyRegion] }
