package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// PricingAPI reads on-demand prices from the AWS Price List Query API;
// *pricing.Client satisfies it. Its endpoints live in a few regions only
// (PricingRegion picks one), whatever the cluster's region.
type PricingAPI interface {
	GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

var _ PricingAPI = (*pricing.Client)(nil)

// PricingRegion is the Price List endpoint region nearest to region: the
// API is served from us-east-1, eu-central-1 and ap-south-1 only.
func PricingRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "eu-"), strings.HasPrefix(region, "me-"), strings.HasPrefix(region, "af-"), strings.HasPrefix(region, "il-"):
		return "eu-central-1"
	}
	return "us-east-1"
}

// onDemandFilters select shared-tenancy Linux without pre-installed
// software or licences, in the region, and only capacity actually used
// (not reservations): the price a CreateFleet on-demand launch pays.
func onDemandFilters(region string) []pricingtypes.Filter {
	f := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
	}
	return []pricingtypes.Filter{
		f("regionCode", region),
		f("operatingSystem", "Linux"),
		f("preInstalledSw", "NA"),
		f("tenancy", "Shared"),
		f("capacitystatus", "Used"),
		f("licenseModel", "No License required"),
	}
}

// RefreshOnDemandPrices reads the region's on-demand Linux prices from the
// Pricing API. Until it first succeeds, on-demand offerings are priced from
// the embedded snapshot; a failed refresh keeps the last prices read.
func (p *Provider) RefreshOnDemandPrices(ctx context.Context) error {
	if p.pricing == nil {
		return errors.New("no Pricing API client configured")
	}
	prices := map[string]float64{}
	pg := pricing.NewGetProductsPaginator(p.pricing, &pricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		Filters:       onDemandFilters(p.opts.Region),
		FormatVersion: aws.String("aws_v1"),
		MaxResults:    aws.Int32(100),
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("reading on-demand prices (pricing:GetProducts): %w", explain(err))
		}
		for _, doc := range page.PriceList {
			name, price, err := ParsePriceListEntry(doc)
			if err != nil {
				return fmt.Errorf("reading on-demand prices: %w", err)
			}
			// Zero prices are placeholders for types not sold; keep the lowest real one.
			if price > 0 && (prices[name] == 0 || price < prices[name]) {
				prices[name] = price
			}
		}
	}
	if len(prices) == 0 {
		return fmt.Errorf("reading on-demand prices: the Pricing API returned no Linux on-demand price for region %s", p.opts.Region)
	}
	p.pricesMu.Lock()
	p.onDemandPrices = prices
	p.status.OnDemandAt = p.clock.Now()
	p.priceSeq++
	p.pricesMu.Unlock()
	return nil
}

// priceListEntry is the part of one Price List product document read here.
type priceListEntry struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// ParsePriceListEntry reads the instance type and its hourly USD price from
// one GetProducts PriceList entry (a JSON document sent as a string).
func ParsePriceListEntry(doc string) (string, float64, error) {
	var e priceListEntry
	if err := json.Unmarshal([]byte(doc), &e); err != nil {
		return "", 0, fmt.Errorf("decoding a price list entry: %w", err)
	}
	name := e.Product.Attributes.InstanceType
	if name == "" {
		return "", 0, errors.New("a price list entry has no product.attributes.instanceType")
	}
	for _, term := range e.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			usd, ok := dim.PricePerUnit["USD"]
			if !ok || !strings.EqualFold(dim.Unit, "Hrs") {
				continue
			}
			price, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return "", 0, fmt.Errorf("price list entry for %s: USD price %q: %w", name, usd, err)
			}
			return name, price, nil
		}
	}
	return "", 0, fmt.Errorf("price list entry for %s has no hourly on-demand USD price", name)
}
