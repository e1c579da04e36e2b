package aws

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

// Provider is the AWS CloudProvider.
type Provider struct {
	ec2         EC2API
	ssm         SSMAPI
	iam         IAMAPI
	pricing     PricingAPI
	cluster     Cluster
	clock       clock.Clock
	ice         *catalog.UnavailableOfferings
	history     *catalog.InterruptionHistory
	nodeClasses NodeClassGetter
	opts        Options
	log         logr.Logger
	specs       map[string]catalog.Spec
	specList    []catalog.Spec

	ltMu      sync.Mutex
	templates map[string]bool      // launch template names known to exist
	ltUsed    map[string]time.Time // launch template name → last launch that used it

	resolveMu sync.Mutex
	resolved  map[string]resolvedEntry

	typesMu   sync.Mutex
	typeCache map[string]typesEntry
	// bootMu guards bootCache: the last split of a cached type list by
	// whether the images boot them, keyed by the list's cache key.
	bootMu    sync.Mutex
	bootCache map[string]bootEntry

	pricesMu   sync.RWMutex
	spotPrices map[string]map[string]float64 // type → zone → USD/h
	offeredIn  map[string][]string           // type → zones, when discovered
	discovered map[string]catalog.Spec       // offered types the snapshot lacks
	// onDemandPrices are the Pricing API's, type → USD/h; nil until read.
	onDemandPrices map[string]float64
	status         CatalogStatus
	priceSeq       uint64

	profilesMu sync.Mutex
	profiles   map[string]profileEntry // node class → instance profile known good
	// profileWriteMu serialises the IAM calls that bring profiles in line,
	// so the node class controller and a launch resolving at once do not
	// race each other's create and add-role.
	profileWriteMu sync.Mutex

	subnetsMu   sync.Mutex
	fullSubnets map[string]time.Time // subnet → hidden until

	// adoptMu serialises handing untagged instances of merged launches to
	// claims; assigned remembers who got which (instance id → claim).
	adoptMu  sync.Mutex
	assigned map[string]assignment

	// adjust is applied to the types a launch plans with, after the ICE
	// cache, reservations and spot risk, as to those GetInstanceTypes
	// hands the controllers: the cluster's NodeOverlays
	// (cloudprovider/overlay sets it). nil: none.
	adjust func(context.Context, []*catalog.InstanceType) ([]*catalog.InstanceType, error)

	// reservations: what each capacity reservation has free (reservations.go).
	reservations reservationLedger
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

type resolvedEntry struct {
	key string
	at  time.Time
	r   *Resolved
}

type typesEntry struct {
	at       time.Time
	priceSeq uint64
	types    []*catalog.InstanceType // offerings all available
	// applied is the types the images appliedAMIs boot, with the ICE cache
	// applied at sequence appliedSeq.
	applied     []*catalog.InstanceType
	appliedSeq  uint64
	appliedAMIs []awsv1.AMI
}

// bootEntry is types split by whether the images amis boot them.
type bootEntry struct {
	types            []*catalog.InstanceType
	amis             []awsv1.AMI
	kept, unbootable []*catalog.InstanceType
}

// New builds the provider.
func New(cfg Config) (*Provider, error) {
	if cfg.EC2 == nil || cfg.SSM == nil {
		return nil, errors.New("the AWS provider needs EC2 and SSM clients")
	}
	if cfg.NodeClasses == nil {
		return nil, errors.New("the AWS provider needs a node class getter")
	}
	if cfg.Cluster.Name == "" {
		return nil, errors.New("the AWS provider needs the cluster name")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	opts := cfg.Options.withDefaults()
	if cfg.Unavailable == nil {
		cfg.Unavailable = catalog.NewUnavailableOfferings(cfg.Clock, opts.ICETTL)
	}
	if cfg.Interruptions == nil {
		cfg.Interruptions = catalog.NewInterruptionHistory(cfg.Clock, 0)
	}
	specs := opts.Specs
	if specs == nil {
		var err error
		if specs, err = catalog.Specs(); err != nil {
			return nil, fmt.Errorf("loading instance type specs: %w", err)
		}
	}
	p := &Provider{
		ec2: cfg.EC2, ssm: cfg.SSM, iam: cfg.IAM, pricing: cfg.Pricing, cluster: cfg.Cluster, clock: cfg.Clock, ice: cfg.Unavailable, history: cfg.Interruptions,
		nodeClasses: cfg.NodeClasses, opts: opts, log: opts.Log,
		specs: make(map[string]catalog.Spec, len(specs)), specList: specs,
		templates: map[string]bool{}, ltUsed: map[string]time.Time{}, resolved: map[string]resolvedEntry{}, typeCache: map[string]typesEntry{},
		spotPrices: map[string]map[string]float64{}, fullSubnets: map[string]time.Time{},
		profiles: map[string]profileEntry{}, assigned: map[string]assignment{},
	}
	for _, s := range specs {
		p.specs[s.Name] = s
	}
	return p, nil
}

// Name is "aws".
func (p *Provider) Name() string { return "aws" }

// Unavailable is the ICE cache the provider marks.
func (p *Provider) Unavailable() *catalog.UnavailableOfferings { return p.ice }

// Interruptions is the history of observed spot interruptions the provider rates offerings with.
func (p *Provider) Interruptions() *catalog.InterruptionHistory { return p.history }

// nodeClass reads the claim's or pool's node class.
func (p *Provider) nodeClass(ctx context.Context, ref *nsv1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil || ref.Name == "" {
		return nil, cloudprovider.NewNodeClassNotReadyError(errors.New("no nodeClassRef"))
	}
	nc, err := p.nodeClasses(ctx, ref.Name)
	if err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("reading EC2NodeClass %s: %w", ref.Name, err))
	}
	return nc, nil
}

// resolveCached is Resolve with a short cache, keyed by the node class's
// spec so an edit takes effect at once.
func (p *Provider) resolveCached(ctx context.Context, nc *awsv1.EC2NodeClass) (*Resolved, error) {
	key := hashJSON(nc.Spec)
	now := p.clock.Now()
	p.resolveMu.Lock()
	e, ok := p.resolved[nc.Name]
	p.resolveMu.Unlock()
	if ok && e.key == key && now.Sub(e.at) < p.opts.ResolveTTL {
		return e.r, nil
	}
	r, err := p.Resolve(ctx, nc)
	if err != nil {
		return nil, err
	}
	p.resolveMu.Lock()
	p.resolved[nc.Name] = resolvedEntry{key: key, at: now, r: r}
	p.resolveMu.Unlock()
	return r, nil
}

// Ping makes one cheap read (DescribeSubnets, at most 5) that the
// controller's policy grants, to learn that EC2 answers with these
// credentials; the controller is not ready before it succeeds.
func (p *Provider) Ping(ctx context.Context) error {
	if _, err := p.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)}); err != nil {
		return fmt.Errorf("asking EC2 (DescribeSubnets): %w", explain(err))
	}
	return nil
}
