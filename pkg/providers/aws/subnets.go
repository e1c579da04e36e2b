package aws

import (
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
)

// markSubnetFull hides a subnet that ran out of addresses for the ICE TTL;
// DescribeSubnets' count may lag behind, and launching into it again would
// fail the same way.
func (p *Provider) markSubnetFull(id string) {
	if id == "" {
		return
	}
	p.subnetsMu.Lock()
	defer p.subnetsMu.Unlock()
	p.fullSubnets[id] = p.clock.Now().Add(p.opts.ICETTL)
}

// usableSubnets are the resolved subnets not recently found full.
func (p *Provider) usableSubnets(all []ResolvedSubnet) []plan.Subnet {
	now := p.clock.Now()
	p.subnetsMu.Lock()
	defer p.subnetsMu.Unlock()
	out := make([]plan.Subnet, 0, len(all))
	for _, s := range all {
		if until, ok := p.fullSubnets[s.ID]; ok {
			if now.Before(until) {
				continue
			}
			delete(p.fullSubnets, s.ID)
		}
		out = append(out, plan.Subnet{ID: s.ID, Zone: s.Zone, FreeIPs: s.FreeIPs})
	}
	return out
}
