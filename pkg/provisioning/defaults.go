package provisioning

import (
	"time"

	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Defaults of the provisioner's timings, shared by cmd/controller's flags,
// the controllers and the simulator so a simulated run keeps the product's
// rhythm.
const (
	// DefaultRecheckInterval is how often a still-pending pod triggers a
	// batch again, so a pod whose nomination lapsed, or whose pool became
	// ready, is not forgotten.
	DefaultRecheckInterval = 10 * time.Second
	// DefaultNominationTTL is how long a pod planned onto a target that is
	// neither a launching claim nor ready (a claim the cache has not shown
	// yet, a node Nodesmith does not manage) is kept out of new batches;
	// past it the pod is planned again (the node may never come). A
	// nomination onto a launching claim lasts until the claim initializes
	// (then NominationGrace) or is deleted (its launch and registration
	// timeouts delete it): a thousand claims can take longer than a minute
	// to launch, and planning their pods again then doubles the fleet.
	DefaultNominationTTL = time.Minute
	// NominationGrace is how long kube-scheduler gets to bind pods to a
	// node that became ready for them before a still-pending pod is planned
	// again, ahead of its nomination's expiry.
	NominationGrace = 15 * time.Second
	// MaxReplanRounds bounds re-planning within one cycle after launches
	// found no capacity.
	MaxReplanRounds = 3
	// DefaultMaxOptionsPerClaim hands the cloud provider a wide choice: it
	// cuts to what one CreateFleet takes while keeping minValues satisfied,
	// which a plain price cut in the solver could not (the cheapest 60
	// options of a large claim may span only one or two families).
	DefaultMaxOptionsPerClaim = 240
)

// SolveOptions are the solver options the product runs with, o's own
// settings kept: DefaultMaxOptionsPerClaim unless o sets a cap, and claims
// charged their expected launch (scheduling.Options.ChargeExpectedLaunch),
// as the launcher trims every launch of a limited pool to its limits
// (TrimClaim). The controller, the simulator (through it), plan and explain
// all solve with these.
func SolveOptions(o scheduling.Options) scheduling.Options {
	if o.MaxOptionsPerClaim <= 0 {
		o.MaxOptionsPerClaim = DefaultMaxOptionsPerClaim
	}
	o.ChargeExpectedLaunch = true
	return o
}
