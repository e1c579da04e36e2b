package aws

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

// GetInstanceTypes returns the types the pool's node class can launch: the
// catalog's types with offerings in the zones of the node class's subnets,
// current spot prices, allocatable from the node class's kubelet settings,
// the ICE cache applied, and spot offerings above the pool's
// maxSpotInterruptionRisk marked unavailable, so the solver plans only
// what Create may launch.
func (p *Provider) GetInstanceTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error) {
	types, err := p.availableTypes(ctx, pool)
	if err != nil || pool.Spec.Template.Spec.MaxSpotInterruptionRisk == nil {
		return types, err
	}
	return catalog.WithSpotRisk(types, p.history, pool.Spec.Template.Spec.MaxSpotInterruptionRisk), nil
}

// AdjustInstanceTypes makes every launch plan with the types fn makes of
// the provider's (after the ICE cache, reservations and spot risk), so
// the options are ordered, the on-demand fleet prioritized and the claim
// priced as the controllers, which read GetInstanceTypes through the same
// fn, chose (cloudprovider/overlay: the NodeOverlays).
func (p *Provider) AdjustInstanceTypes(fn func(context.Context, []*catalog.InstanceType) ([]*catalog.InstanceType, error)) {
	p.adjust = fn
}

// availableTypes is GetInstanceTypes before the risk ceiling.
func (p *Provider) availableTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error) {
	nc, err := p.nodeClass(ctx, pool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	res, err := p.resolveCached(ctx, nc)
	if err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(err)
	}
	// The images Create launches with: the solver must not plan a type
	// none of them boots.
	res = withStatus(res, nc)
	types, key, err := p.instanceTypes(ctx, nc, res)
	if err != nil {
		return nil, err
	}
	// The ICE view is cached too, keyed by the cache's sequence number,
	// which moves when an offering is marked and when a mark expires.
	seq := p.ice.SeqNum()
	p.typesMu.Lock()
	defer p.typesMu.Unlock()
	e, ok := p.typeCache[key]
	if !ok || !sameTypes(e.types, types) {
		// Rebuilt by someone else meanwhile: do not cache a view of old types.
		kept, _ := p.bootable(key, types, res.AMIs)
		return p.withReservations(catalog.WithAvailability(kept, p.ice), res), nil
	}
	if e.applied == nil || e.appliedSeq != seq || !slices.EqualFunc(e.appliedAMIs, res.AMIs, sameAMI) {
		kept, _ := p.bootable(key, types, res.AMIs)
		e.applied, e.appliedSeq, e.appliedAMIs = catalog.WithAvailability(kept, p.ice), seq, res.AMIs
		p.typeCache[key] = e
	}
	// Reserved offerings change with every launch into a reservation, so
	// they are added to each answer, not cached.
	return p.withReservations(append([]*catalog.InstanceType(nil), e.applied...), res), nil
}

func sameAMI(a, b awsv1.AMI) bool {
	return a.ID == b.ID && a.Architecture == b.Architecture && equality.Semantic.DeepEqual(a.Requirements, b.Requirements)
}

func sameTypes(a, b []*catalog.InstanceType) bool {
	return len(a) == len(b) && (len(a) == 0 || a[0] == b[0])
}

// instanceTypes is the cached, ICE-free view for a node class. The cache
// key holds everything that changes capacity or offerings (kubelet
// settings, root volume, zones); a price refresh invalidates it.
func (p *Provider) instanceTypes(ctx context.Context, nc *awsv1.EC2NodeClass, res *Resolved) ([]*catalog.InstanceType, string, error) {
	if p.opts.DiscoverInstanceTypes {
		if err := p.ensureOfferings(ctx); err != nil {
			return nil, "", err
		}
	}
	zones := res.Zones()
	rootSize := rootVolumeSize(nc, res.Family)
	key := hashJSON(struct {
		K *awsv1.KubeletConfiguration
		Z []string
		R string
	}{nc.Spec.Kubelet, zones, rootSize.String()})
	now := p.clock.Now()
	p.pricesMu.RLock()
	seq := p.priceSeq
	p.pricesMu.RUnlock()
	p.typesMu.Lock()
	e, ok := p.typeCache[key]
	p.typesMu.Unlock()
	if ok && e.priceSeq == seq && now.Sub(e.at) < p.opts.InstanceTypesTTL {
		return e.types, key, nil
	}
	kubelet, err := catalog.KubeletSettingsFrom(nc.Spec.Kubelet)
	if err != nil {
		return nil, "", cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("reading kubelet settings: %w", err))
	}
	opts := p.opts.Catalog
	opts.Region, opts.Zones, opts.Kubelet, opts.EphemeralStorage = p.opts.Region, zones, kubelet, rootSize
	types := p.buildTypes(opts)
	p.typesMu.Lock()
	p.typeCache[key] = typesEntry{at: now, priceSeq: seq, types: types}
	p.typesMu.Unlock()
	return types, key, nil
}

// buildTypes runs the catalog's filters and math, then replaces the
// snapshot's offerings with what this account sees: the discovered zones
// (when discovery is on), the on-demand prices of the Pricing API and the
// spot prices of the spot price history, each once it has been read.
func (p *Provider) buildTypes(opts catalog.Options) []*catalog.InstanceType {
	p.pricesMu.RLock()
	defer p.pricesMu.RUnlock()
	specs := p.specsWithPrices()
	byName := make(map[string]*catalog.Spec, len(specs))
	for i := range specs {
		byName[specs[i].Name] = &specs[i]
	}
	liveSpot := !p.status.SpotPricesAt.IsZero()
	var out []*catalog.InstanceType
	for _, it := range catalog.FromSpecs(specs, opts).Types() {
		spec := byName[it.Name]
		zones := opts.Zones
		if p.offeredIn != nil {
			zones = intersect(opts.Zones, p.offeredIn[it.Name])
		} else {
			zones = catalog.ZonesFor(spec, zones)
		}
		spot := spec.SupportsUsageClass(nsv1.CapacityTypeSpot)
		var offs catalog.Offerings
		for _, z := range zones {
			if spec.OnDemandPrice > 0 {
				offs = append(offs, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeOnDemand, Price: spec.OnDemandPrice, Available: true})
			}
			if !spot {
				continue
			}
			if liveSpot {
				// The market's word: no price in the history, no spot pool.
				if price, ok := p.spotPrices[it.Name][z]; ok {
					offs = append(offs, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: price, Available: true})
				}
				continue
			}
			// Before the first read, the snapshot rule's estimate, one zone
			// at a time: the rule never drops the only zone.
			for _, o := range catalog.OfferingsFor(spec, catalog.Options{Zones: []string{z}}) {
				if o.CapacityType == nsv1.CapacityTypeSpot {
					offs = append(offs, o)
				}
			}
		}
		if len(offs) == 0 {
			continue
		}
		out = append(out, it.WithOfferings(offs))
	}
	return out
}

func intersect(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if in[x] {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// rootVolumeSize is the ephemeral storage a node gets: the root volume's size.
func rootVolumeSize(nc *awsv1.EC2NodeClass, family string) resource.Quantity {
	bds := nc.Spec.BlockDeviceMappings
	if len(bds) == 0 {
		bds = defaultBlockDevices(family)
	}
	for _, bd := range bds {
		if bd.RootVolume && bd.EBS != nil && bd.EBS.VolumeSize != nil {
			return bd.EBS.VolumeSize.DeepCopy()
		}
	}
	for _, bd := range bds {
		if bd.EBS != nil && bd.EBS.VolumeSize != nil && strings.HasSuffix(*bd.DeviceName, "xvda") {
			return bd.EBS.VolumeSize.DeepCopy()
		}
	}
	return resource.MustParse("20Gi")
}
