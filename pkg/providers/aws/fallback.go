package aws

import (
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
)

// fellBack reports whether a launch that went on-demand is a spot fallback:
// spot failed for lack of capacity during this launch, or, with the claim's
// capacity type left open (the provisioner narrows a claim to the capacity
// type it planned, and it planned on-demand because the cache hid spot),
// its types and zones would launch spot and the insufficient-capacity cache
// hides some of those spot options. A claim on-demand for any other reason (spot dearer, the pool
// allows no spot, no spot offering at all) is no fallback.
func (p *Provider) fellBack(l *launch) bool {
	if l.pl.CapacityType != nsv1.CapacityTypeOnDemand {
		return false
	}
	if l.spotFailed {
		return true
	}
	open := make([]nsv1.NodeSelectorRequirementWithMinValues, 0, len(l.claim.Spec.Requirements))
	for _, r := range l.claim.Spec.Requirements {
		if r.Key != nsv1.LabelCapacityType {
			open = append(open, r)
		}
	}
	in := plan.Input{Requirements: open, Requests: l.claim.Spec.Resources.Requests, Subnets: l.subnets, MaxOptions: p.opts.MaxOverrides}
	in.InstanceTypes = catalog.WithSpotRisk(catalog.WithAvailability(l.base, nil), p.history, l.claim.Spec.MaxSpotInterruptionRisk)
	without, err := plan.Make(in)
	if err != nil || without.CapacityType != nsv1.CapacityTypeSpot {
		return false
	}
	// The cache hid some of those spot options: the provisioner keeps a
	// floor of spot options per claim, so hiding some is enough for it to
	// plan the claim on-demand.
	in.InstanceTypes = l.types
	with, err := plan.Make(in)
	return err != nil || with.CapacityType != nsv1.CapacityTypeSpot || len(with.Options) < len(without.Options)
}

// markFallback records a spot fallback on the launched claim, with when.
func markFallback(c *nsv1.NodeClaim, now time.Time) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[nsv1.AnnotationSpotFallback] = now.UTC().Format(time.RFC3339)
}
