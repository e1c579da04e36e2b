package aws

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// NodeClassGetter reads an EC2NodeClass by name: the controller passes a
// client-backed getter, the simulator an in-memory one.
type NodeClassGetter func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error)

// Cluster is what a node needs to join.
type Cluster struct {
	Name     string
	Endpoint string
	// CABundle is the cluster CA, base64-encoded PEM.
	CABundle string
	// ServiceCIDR is the cluster's service CIDR, for nodeadm; optional.
	ServiceCIDR string
}

// Options tune the provider. Zero values get the defaults noted per field.
type Options struct {
	// Region of the clients; default us-east-1 (labels and the catalog).
	Region string
	// KubernetesVersion names the SSM parameters of alias AMIs; default "1.37".
	KubernetesVersion string
	// Catalog shapes instance types (VM overhead, max-pods cap, previous
	// generation); region, zones and kubelet settings are filled per node class.
	Catalog catalog.Options
	// Specs are the instance types known; default the embedded snapshot.
	Specs []catalog.Spec
	// DiscoverInstanceTypes asks EC2 (DescribeInstanceTypeOfferings) where
	// each type is offered instead of trusting the snapshot's zone rule, and
	// describes offered types the snapshot lacks (DescribeInstanceTypes).
	DiscoverInstanceTypes bool
	// InstanceTypesTTL is how long a node class's instance types are cached; default 5m.
	InstanceTypesTTL time.Duration
	// ResolveTTL is how long a node class's resolved subnets, groups and
	// images are reused by Create; default 1m.
	ResolveTTL time.Duration
	// MaxOverrides per CreateFleet; default 60.
	MaxOverrides int
	// LaunchTemplateTTL is how long a launch template this cluster made may
	// go unused before GarbageCollectLaunchTemplates deletes it; default 1h.
	LaunchTemplateTTL time.Duration
	// ICETTL is how long an offering stays hidden after an insufficient-
	// capacity error when New makes the ICE cache (Config.Unavailable nil);
	// default 3m.
	ICETTL time.Duration
	// MaxLaunchAttempts bounds CreateFleet calls per Create (the ICE
	// fallbacks: other pools, then on-demand); default 3.
	MaxLaunchAttempts int
	// Log receives fallback and launch lines; default discard.
	Log logr.Logger
	// OnEvent, when set, is told about decisions a user may question (a
	// fallback to other pools or to on-demand), so the controller can
	// record Events on the claim. Reasons are the Event* constants.
	OnEvent func(claim *nsv1.NodeClaim, reason, message string)
}

// Event reasons passed to Options.OnEvent.
const (
	// EventCapacityFallback: a CreateFleet call found no capacity; the
	// claim is retried at once with the remaining offerings.
	EventCapacityFallback = "CapacityFallback"
	// EventOnDemandFallback: the claim allows spot but launches on-demand.
	EventOnDemandFallback = "OnDemandFallback"
	// EventAdopted: the claim took the instance an earlier launch started
	// for it, whose answer was lost, instead of launching another.
	EventAdopted = "InstanceAdopted"
)

// WarningEvent reports whether an Options.OnEvent reason is worth a
// Warning: a fallback to on-demand costs money; the others are Normal.
func WarningEvent(reason string) bool { return reason == EventOnDemandFallback }

// Config is everything New needs.
type Config struct {
	EC2 EC2API
	SSM SSMAPI
	// IAM, when set, makes Resolve create (or adopt) the instance profile of
	// a node class with spec.role and check that spec.instanceProfile
	// exists; DeleteInstanceProfile removes the managed one. When nil the
	// provider only computes the managed profile's name and trusts that it
	// exists, as a simulator without IAM wants.
	IAM IAMAPI
	// Pricing, when set, lets RefreshOnDemandPrices read on-demand prices
	// from the Price List API; without it they come from the snapshot.
	Pricing PricingAPI
	Cluster Cluster
	Clock   clock.Clock
	// Unavailable is the ICE cache shared with whatever else reads offerings.
	Unavailable *catalog.UnavailableOfferings
	// Interruptions are the spot interruptions the interruption handler
	// has seen; they raise the risk of their offerings (catalog.SpotRisk).
	// New makes an empty history when nil.
	Interruptions *catalog.InterruptionHistory
	NodeClasses   NodeClassGetter
	Options       Options
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = catalog.DefaultRegion
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = "1.37"
	}
	if o.InstanceTypesTTL <= 0 {
		o.InstanceTypesTTL = 5 * time.Minute
	}
	if o.ResolveTTL <= 0 {
		o.ResolveTTL = time.Minute
	}
	if o.LaunchTemplateTTL <= 0 {
		o.LaunchTemplateTTL = time.Hour
	}
	if o.MaxOverrides <= 0 {
		o.MaxOverrides = 60
	}
	if o.ICETTL <= 0 {
		o.ICETTL = catalog.DefaultUnavailableTTL
	}
	if o.MaxLaunchAttempts <= 0 {
		o.MaxLaunchAttempts = 3
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return o
}
