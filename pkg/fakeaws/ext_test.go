package fakeaws_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/smithy-go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// extEnv is a world with the Pricing and EKS clients pointed at it.
type extEnv struct {
	world   *fakeaws.World
	srv     *fakeaws.Server
	pricing *pricing.Client
	eks     *eks.Client
	cfg     aws.Config
	url     string
}

func newExtEnv(t *testing.T, mutate ...func(*fakeaws.Options)) *extEnv {
	t.Helper()
	o := fakeaws.Options{Clock: clocktesting.NewFakeClock(epoch), ClusterName: cluster, Seed: 1}
	for _, m := range mutate {
		m(&o)
	}
	w := fakeaws.NewWorld(o)
	srv := fakeaws.NewServer(w)
	url := srv.Start()
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""), RetryMaxAttempts: 1}
	return &extEnv{
		world: w, srv: srv, cfg: cfg, url: url,
		pricing: pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.BaseEndpoint = aws.String(url) }),
		eks:     eks.NewFromConfig(cfg, func(o *eks.Options) { o.BaseEndpoint = aws.String(url) }),
	}
}

func linuxFilters(extra ...pricingtypes.Filter) []pricingtypes.Filter {
	f := func(k, v string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(k), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(v)}
	}
	return append([]pricingtypes.Filter{f("regionCode", "us-east-1"), f("operatingSystem", "Linux"), f("tenancy", "Shared"),
		f("preInstalledSw", "NA"), f("capacitystatus", "Used"), f("licenseModel", "No License required")}, extra...)
}

func TestPricingGetProductsPagesAndFilters(t *testing.T) {
	e := newExtEnv(t)
	ctx := context.Background()
	onDemand := map[string]float64{}
	for _, p := range e.world.Pools() {
		if p.CapacityType == fakeaws.CapacityOnDemand {
			onDemand[p.InstanceType] = p.Price
		}
	}
	pg := pricing.NewGetProductsPaginator(e.pricing, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"), Filters: linuxFilters(), MaxResults: aws.Int32(4),
	})
	pages := 0
	got := map[string]float64{}
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, doc := range page.PriceList {
			var d struct {
				Product struct{ Attributes map[string]string }
				Terms   struct {
					OnDemand map[string]struct {
						PriceDimensions map[string]struct {
							Unit         string
							PricePerUnit map[string]string
						}
					}
				}
			}
			if err := json.Unmarshal([]byte(doc), &d); err != nil {
				t.Fatalf("PriceList entry is not a JSON document: %v", err)
			}
			for _, term := range d.Terms.OnDemand {
				for _, dim := range term.PriceDimensions {
					var price float64
					if err := json.Unmarshal([]byte(dim.PricePerUnit["USD"]), &price); err != nil || dim.Unit != "Hrs" {
						t.Fatalf("dimension %+v", dim)
					}
					if _, dup := got[d.Product.Attributes["instanceType"]]; dup {
						t.Errorf("two Linux shared products for %s", d.Product.Attributes["instanceType"])
					}
					got[d.Product.Attributes["instanceType"]] = price
				}
			}
		}
	}
	if want := (len(onDemand) + 3) / 4; pages != want {
		t.Errorf("%d pages of 4, want %d", pages, want)
	}
	if len(got) != len(onDemand) {
		t.Fatalf("%d products, want one per type (%d)", len(got), len(onDemand))
	}
	for typ, price := range onDemand {
		if got[typ] != price {
			t.Errorf("%s priced %v, the pools charge %v", typ, got[typ], price)
		}
	}
	// Without the operating-system filter, Windows and RHEL come back too.
	all, err := e.pricing.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(100),
		Filters: []pricingtypes.Filter{{Field: aws.String("instanceType"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("m5.large")}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.PriceList) < 3 {
		t.Errorf("m5.large without other filters: %d products, want the other operating systems and tenancies too", len(all.PriceList))
	}
	_, err = e.pricing.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonS3")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "NotFoundException" {
		t.Errorf("unknown service: %v, want NotFoundException", err)
	}
}

func TestEKSDescribeCluster(t *testing.T) {
	e := newExtEnv(t)
	ctx := context.Background()
	out, err := e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Cluster
	if aws.ToString(c.Endpoint) == "" || c.CertificateAuthority == nil || aws.ToString(c.CertificateAuthority.Data) == "" ||
		c.KubernetesNetworkConfig == nil || aws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr) != "10.100.0.0/16" ||
		aws.ToString(c.Version) != "1.37" || string(c.Status) != "ACTIVE" || aws.ToString(c.Arn) != "arn:aws:eks:us-east-1:123456789012:cluster/lab" {
		t.Errorf("cluster %+v", c)
	}
	e.srv.SetCluster(fakeaws.EKSCluster{Name: "other", Endpoint: "https://127.0.0.1:6443", CAData: "Q0E=", ServiceIPv4CIDR: "172.20.0.0/16", Version: "1.36"})
	out, err = e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("other")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Cluster.Endpoint) != "https://127.0.0.1:6443" || aws.ToString(out.Cluster.KubernetesNetworkConfig.ServiceIpv4Cidr) != "172.20.0.0/16" {
		t.Errorf("set cluster reported as %+v", out.Cluster)
	}
	_, err = e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("missing")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ResourceNotFoundException" {
		t.Errorf("missing cluster: %v, want ResourceNotFoundException", err)
	}
}

func TestDriftMarketDiffersFromTheRule(t *testing.T) {
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	base := fakeaws.DefaultSpecs()
	drifted := fakeaws.DriftMarket(base, zones, 3)
	again := fakeaws.DriftMarket(base, zones, 3)
	var missing, priced int
	for i, d := range drifted {
		if len(d.Zones) == 0 {
			t.Errorf("%s offered nowhere", d.Name)
		}
		if len(d.Zones) < len(zones) {
			missing++
		}
		if d.OnDemandPrice != base[i].OnDemandPrice {
			priced++
		}
		for z, p := range d.ZoneSpotPrices {
			if p > d.OnDemandPrice || again[i].ZoneSpotPrices[z] != p {
				t.Errorf("%s %s spot %v (on-demand %v, again %v)", d.Name, z, p, d.OnDemandPrice, again[i].ZoneSpotPrices[z])
			}
		}
	}
	if missing == 0 || priced == 0 {
		t.Errorf("drift withdrew %d types from a zone and repriced %d on demand; want some of each", missing, priced)
	}
}
