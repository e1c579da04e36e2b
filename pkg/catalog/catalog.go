package catalog

import (
	"fmt"
	"sort"
)

// Catalog is the set of instance types a region offers, built once by Load
// and read-only afterwards: callers share its *InstanceType values and must
// not modify them (WithAvailability makes copies when availability changes).
type Catalog struct {
	region  string
	zones   []string
	types   []*InstanceType
	byName  map[string]*InstanceType
	skipped map[string]string
}

// Reasons a snapshot record is left out of a catalog.
const (
	SkipNotOffered         = "not offered in the region"
	SkipNoPrice            = "no price for any capacity type"
	SkipIncomplete         = "incomplete specs (no architecture, vCPUs or memory)"
	SkipPreviousGeneration = "previous generation"
)

// Load builds the catalog from the embedded snapshot: every complete,
// priced type offered in the region, with offerings from the snapshot rule
// (see OfferingsFor).
func Load(opts Options) (*Catalog, error) {
	specs, err := parsedSpecs()
	if err != nil {
		return nil, fmt.Errorf("loading the instance catalog: %w", err)
	}
	return FromSpecs(specs, opts), nil
}

// FromSpecs builds a catalog from the given specs with the snapshot's
// offering rule and filters; for tests and the simulator's own type lists.
func FromSpecs(specs []Spec, opts Options) *Catalog {
	opts = opts.withDefaults()
	c := &Catalog{
		region:  opts.Region,
		zones:   append([]string(nil), opts.Zones...),
		byName:  make(map[string]*InstanceType, len(specs)),
		skipped: map[string]string{},
	}
	for i := range specs {
		spec := &specs[i]
		if reason := skipReason(spec, opts); reason != "" {
			c.skipped[spec.Name] = reason
			continue
		}
		offerings := OfferingsFor(spec, opts)
		if len(offerings) == 0 {
			c.skipped[spec.Name] = SkipNoPrice
			continue
		}
		it := NewInstanceType(*spec, offerings, opts)
		c.types = append(c.types, it)
		c.byName[it.Name] = it
	}
	sort.Slice(c.types, func(i, j int) bool { return c.types[i].Name < c.types[j].Name })
	return c
}

func skipReason(spec *Spec, opts Options) string {
	switch {
	case !spec.OfferedInRegion:
		return SkipNotOffered
	case spec.OnDemandPrice <= 0 && spec.SpotPrice <= 0:
		return SkipNoPrice
	case !spec.Complete():
		return SkipIncomplete
	case spec.PreviousGeneration && !opts.IncludePreviousGeneration:
		return SkipPreviousGeneration
	}
	return ""
}

// Types returns the instance types ordered by name. The slice is the
// caller's; the types are shared and read-only.
func (c *Catalog) Types() []*InstanceType {
	return append([]*InstanceType(nil), c.types...)
}

// Get returns the named type.
func (c *Catalog) Get(name string) (*InstanceType, bool) {
	it, ok := c.byName[name]
	return it, ok
}

// Zones are the zones offerings were spread over.
func (c *Catalog) Zones() []string { return append([]string(nil), c.zones...) }

// Region is the catalog's region.
func (c *Catalog) Region() string { return c.region }

// Skipped maps each left-out snapshot record to the reason (Skip*).
func (c *Catalog) Skipped() map[string]string {
	out := make(map[string]string, len(c.skipped))
	for k, v := range c.skipped {
		out[k] = v
	}
	return out
}
