package aws

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// describeUnknownTypes fills specs for offered types the snapshot does not
// know (types launched after it was taken) from DescribeInstanceTypes.
// They have no on-demand price, so they are offered as spot only, at the
// spot price history's price.
func (p *Provider) describeUnknownTypes(ctx context.Context, offered map[string][]string) (map[string]catalog.Spec, error) {
	var unknown []string
	for t := range offered {
		if _, ok := p.specs[t]; !ok {
			unknown = append(unknown, t)
		}
	}
	out := map[string]catalog.Spec{}
	const chunk = 100 // DescribeInstanceTypes takes at most 100 names
	for len(unknown) > 0 {
		n := min(chunk, len(unknown))
		names := make([]ec2types.InstanceType, n)
		for i, u := range unknown[:n] {
			names[i] = ec2types.InstanceType(u)
		}
		unknown = unknown[n:]
		pg := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{InstanceTypes: names})
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing instance types: %w", explain(err))
			}
			for _, info := range page.InstanceTypes {
				s := specFromInfo(info)
				out[s.Name] = s
			}
		}
	}
	return out, nil
}

// specFromInfo turns DescribeInstanceTypes' answer into a catalog spec.
func specFromInfo(info ec2types.InstanceTypeInfo) catalog.Spec {
	name := string(info.InstanceType)
	family, size, _ := strings.Cut(name, ".")
	s := catalog.Spec{
		Name: name, Family: family, Size: size, OfferedInRegion: true,
		BareMetal: aws.ToBool(info.BareMetal), Hypervisor: string(info.Hypervisor),
		PreviousGeneration: info.CurrentGeneration != nil && !*info.CurrentGeneration,
	}
	s.Category = family
	if i := strings.IndexAny(family, "0123456789"); i >= 0 {
		s.Category = family[:i]
		j := i
		for j < len(family) && family[j] >= '0' && family[j] <= '9' {
			j++
		}
		s.Generation, _ = strconv.Atoi(family[i:j])
	}
	if pi := info.ProcessorInfo; pi != nil && len(pi.SupportedArchitectures) > 0 {
		s.Architecture = string(pi.SupportedArchitectures[0])
	}
	if v := info.VCpuInfo; v != nil {
		s.VCPUs = int(aws.ToInt32(v.DefaultVCpus))
	}
	if m := info.MemoryInfo; m != nil {
		s.MemoryMiB = aws.ToInt64(m.SizeInMiB)
	}
	if g := info.GpuInfo; g != nil && len(g.Gpus) > 0 {
		gpu := g.Gpus[0]
		s.GPUCount, s.GPUName, s.GPUManufacturer = int(aws.ToInt32(gpu.Count)), strings.ToLower(aws.ToString(gpu.Name)), aws.ToString(gpu.Manufacturer)
		if gpu.MemoryInfo != nil {
			s.GPUMemoryMiB = int64(aws.ToInt32(gpu.MemoryInfo.SizeInMiB))
		}
	}
	if st := info.InstanceStorageInfo; st != nil {
		s.InstanceStorageGB = aws.ToInt64(st.TotalSizeInGB)
	}
	if n := info.NetworkInfo; n != nil {
		s.MaxENIs = int(aws.ToInt32(n.MaximumNetworkInterfaces))
		s.NetworkCards = int(aws.ToInt32(n.MaximumNetworkCards))
		s.IPv4PerENI = int(aws.ToInt32(n.Ipv4AddressesPerInterface))
	}
	for _, c := range info.SupportedUsageClasses {
		s.SupportedUsageClasses = append(s.SupportedUsageClasses, string(c))
	}
	return s
}

// specsWithPrices returns the snapshot specs plus the discovered ones,
// priced by what was read live: on-demand from the Pricing API once it
// answered (a type it has no price for gets none), and each discovered
// spec at its cheapest spot price so the catalog's price filter keeps it
// (unpriced ones are left out by the catalog). Callers hold pricesMu.
func (p *Provider) specsWithPrices() []catalog.Spec {
	if len(p.discovered) == 0 && p.onDemandPrices == nil {
		return p.specList
	}
	out := make([]catalog.Spec, 0, len(p.specList)+len(p.discovered))
	for _, s := range p.specList {
		if p.onDemandPrices != nil {
			s.OnDemandPrice = p.onDemandPrices[s.Name]
		}
		out = append(out, s)
	}
	for name, s := range p.discovered {
		s.SpotPrice = math.Inf(1)
		for _, price := range p.spotPrices[name] {
			s.SpotPrice = math.Min(s.SpotPrice, price)
		}
		if math.IsInf(s.SpotPrice, 1) {
			s.SpotPrice = 0
		}
		s.OnDemandPrice = p.onDemandPrices[name]
		out = append(out, s)
	}
	return out
}

// spec returns the snapshot's or the discovered spec of a type.
func (p *Provider) spec(name string) (catalog.Spec, bool) {
	if s, ok := p.specs[name]; ok {
		return s, true
	}
	p.pricesMu.RLock()
	defer p.pricesMu.RUnlock()
	s, ok := p.discovered[name]
	return s, ok
}
