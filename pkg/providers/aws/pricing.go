package aws

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CatalogStatus says when each live part of the catalog was last read; a
// zero time means never, and that part still comes from the embedded
// snapshot (spot estimates, the snapshot's zone rule, snapshot on-demand prices).
type CatalogStatus struct {
	SpotPricesAt time.Time
	OfferingsAt  time.Time
	OnDemandAt   time.Time
}

// CatalogStatus returns when the live data was last refreshed.
func (p *Provider) CatalogStatus() CatalogStatus {
	p.pricesMu.RLock()
	defer p.pricesMu.RUnlock()
	return p.status
}

// Refresh reloads everything live at once: spot prices, with
// DiscoverInstanceTypes the offerings, and with a Pricing client the
// on-demand prices. The controller runs the three refreshes on their own
// timers instead (pkg/controllers/pricing); the simulator calls Refresh.
// Cached instance types are rebuilt on the next read.
func (p *Provider) Refresh(ctx context.Context) error {
	if err := p.RefreshSpotPrices(ctx); err != nil {
		return err
	}
	if p.opts.DiscoverInstanceTypes {
		if err := p.RefreshOfferings(ctx); err != nil {
			return err
		}
	}
	if p.pricing != nil {
		return p.RefreshOnDemandPrices(ctx)
	}
	return nil
}

// RefreshSpotPrices reads the current spot price of every pool
// (DescribeSpotPriceHistory). Once read, a type is offered as spot in a zone
// only where the history has a price for it.
func (p *Provider) RefreshSpotPrices(ctx context.Context) error {
	now := p.clock.Now()
	type seen struct {
		price float64
		at    time.Time
	}
	latest := map[string]map[string]seen{}
	pg := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
		StartTime:           aws.Time(now),
		ProductDescriptions: []string{"Linux/UNIX"},
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing spot price history: %w", explain(err))
		}
		for _, sp := range page.SpotPriceHistory {
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil {
				continue
			}
			t, z := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
			if latest[t] == nil {
				latest[t] = map[string]seen{}
			}
			// History holds several points per pool; the newest is the price.
			if cur, ok := latest[t][z]; !ok || aws.ToTime(sp.Timestamp).After(cur.at) {
				latest[t][z] = seen{price, aws.ToTime(sp.Timestamp)}
			}
		}
	}
	prices := make(map[string]map[string]float64, len(latest))
	for t, zs := range latest {
		prices[t] = make(map[string]float64, len(zs))
		for z, s := range zs {
			prices[t][z] = s.price
		}
	}
	p.pricesMu.Lock()
	p.spotPrices = prices
	p.status.SpotPricesAt = now
	p.priceSeq++
	p.pricesMu.Unlock()
	return nil
}

// ensureOfferings loads the offered zones once; Refresh keeps them current.
func (p *Provider) ensureOfferings(ctx context.Context) error {
	p.pricesMu.RLock()
	loaded := p.offeredIn != nil
	p.pricesMu.RUnlock()
	if loaded {
		return nil
	}
	return p.RefreshOfferings(ctx)
}

// RefreshOfferings reads which zones offer each type
// (DescribeInstanceTypeOfferings) and describes the offered types the
// snapshot lacks (DescribeInstanceTypes).
func (p *Provider) RefreshOfferings(ctx context.Context) error {
	offered := map[string][]string{}
	pg := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance type offerings: %w", explain(err))
		}
		for _, o := range page.InstanceTypeOfferings {
			t := string(o.InstanceType)
			offered[t] = append(offered[t], aws.ToString(o.Location))
		}
	}
	discovered, err := p.describeUnknownTypes(ctx, offered)
	if err != nil {
		return err
	}
	p.pricesMu.Lock()
	p.offeredIn = offered
	p.discovered = discovered
	p.status.OfferingsAt = p.clock.Now()
	p.priceSeq++
	p.pricesMu.Unlock()
	return nil
}
