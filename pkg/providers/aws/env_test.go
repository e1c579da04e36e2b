package aws

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/middleware"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

const testCluster = "lab"

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testTypes are real snapshot types that both the provider and the world know.
var testTypes = []string{"m5.large", "m5.xlarge", "m6i.large", "c5.large", "c5.xlarge", "r5.large", "m6g.large", "c6g.large", "g4dn.xlarge"}

// env is a simulated AWS behind a loopback server, the real SDK clients
// pointed at it, and a provider on a fake clock.
type env struct {
	t     testing.TB
	ctx   context.Context
	clock *clocktesting.FakeClock
	world *fakeaws.World
	srv   *fakeaws.Server
	url   string
	cfg   aws.Config
	ec2   *ec2.Client
	ssm   *ssm.Client
	iam   *iam.Client // set when envOpts.iam
	p     *Provider
	ice   *catalog.UnavailableOfferings

	mu     sync.Mutex
	fleets []*ec2.CreateFleetInput

	classes map[string]*awsv1.EC2NodeClass
}

type envOpts struct {
	specs    []catalog.Spec // nil: testTypes
	provider func(*Options)
	clock    clock.Clock // nil: the fake clock
	world    func(*fakeaws.Options)
	wrap     func(http.Handler) http.Handler // intercepts the wire
	iam      bool                            // give the provider an IAM client
	pricing  bool                            // give the provider a Pricing client
	server   func(*fakeaws.Server)           // configures the server (policy mode)
}

func snapshotSpecs(t testing.TB, names []string) []catalog.Spec {
	t.Helper()
	all, err := catalog.Specs()
	if err != nil {
		t.Fatal(err)
	}
	if names == nil {
		return all
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []catalog.Spec
	for _, s := range all {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	if len(out) != len(names) {
		t.Fatalf("snapshot has %d of %d test types", len(out), len(names))
	}
	return out
}

// fakeSpec sells a catalog spec in the world at the snapshot's prices.
func fakeSpec(s catalog.Spec) fakeaws.Spec {
	return fakeaws.Spec{
		Name: s.Name, Arch: s.Architecture, VCPU: s.VCPUs, MemoryMiB: s.MemoryMiB,
		GPUCount: s.GPUCount, GPUName: s.GPUName, GPUMfr: s.GPUManufacturer, GPUMemMiB: s.GPUMemoryMiB,
		MaxENIs: s.MaxENIs, IPv4PerENI: s.IPv4PerENI, Hypervisor: s.Hypervisor, BareMetal: s.BareMetal,
		LocalNVMeGB: s.InstanceStorageGB, OnDemandPrice: s.OnDemandPrice, SpotPrice: s.SpotPrice,
		SpotUnsupported: !s.SupportsUsageClass(nsv1.CapacityTypeSpot) || s.SpotPrice <= 0,
	}
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	specs := o.specs
	if specs == nil {
		specs = snapshotSpecs(t, testTypes)
	}
	var fspecs []fakeaws.Spec
	for _, s := range specs {
		if s.Complete() && s.OnDemandPrice > 0 {
			fspecs = append(fspecs, fakeSpec(s))
		}
	}
	fc := clocktesting.NewFakeClock(epoch)
	e := &env{t: t, ctx: context.Background(), clock: fc, classes: map[string]*awsv1.EC2NodeClass{}}
	wo := fakeaws.Options{Clock: fc, ClusterName: testCluster, Seed: 1, Specs: fspecs}
	if o.world != nil {
		o.world(&wo)
	}
	e.world = fakeaws.NewWorld(wo)
	e.srv = fakeaws.NewServer(e.world)
	if o.server != nil {
		o.server(e.srv)
	}
	var h http.Handler = e.srv
	if o.wrap != nil {
		h = o.wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
		Retryer:     NewRetryer(6, time.Millisecond),
	}
	e.cfg = cfg
	record := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("record", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if cf, ok := in.Parameters.(*ec2.CreateFleetInput); ok {
				e.mu.Lock()
				e.fleets = append(e.fleets, cf)
				e.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	}
	e.ec2 = ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.APIOptions = append(o.APIOptions, record)
	})
	e.ssm = ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	var iamAPI IAMAPI
	if o.iam {
		e.iam = iam.NewFromConfig(cfg, func(o *iam.Options) { o.BaseEndpoint = aws.String(srv.URL) })
		iamAPI = e.iam
	}
	var pricingAPI PricingAPI
	if o.pricing {
		pricingAPI = pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	}
	var clk clock.Clock = fc
	if o.clock != nil {
		clk = o.clock
	}
	e.ice = catalog.NewUnavailableOfferings(clk, 3*time.Minute)
	opts := Options{Specs: specs}
	if o.provider != nil {
		o.provider(&opts)
	}
	p, err := New(Config{
		EC2: e.ec2, SSM: e.ssm, IAM: iamAPI, Pricing: pricingAPI, Clock: clk, Unavailable: e.ice,
		Cluster:     Cluster{Name: testCluster, Endpoint: "https://api.lab.example", CABundle: "Q0E="},
		NodeClasses: e.getNodeClass,
		Options:     opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	e.addNodeClass(defaultNodeClass())
	return e
}

func (e *env) getNodeClass(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	nc, ok := e.classes[name]
	if !ok {
		return nil, &notFound{name}
	}
	return nc.DeepCopy(), nil
}

type notFound struct{ name string }

func (n *notFound) Error() string { return "ec2nodeclass " + n.name + " not found" }

func (e *env) addNodeClass(nc *awsv1.EC2NodeClass) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.classes[nc.Name] = nc
}

func (e *env) fleetCalls() []*ec2.CreateFleetInput {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*ec2.CreateFleetInput(nil), e.fleets...)
}

func defaultNodeClass() *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{}
	nc.Name = "default"
	nc.Spec = awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{awsv1.TagDiscovery: testCluster}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{awsv1.TagDiscovery: testCluster}}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       aws.String("NodeRole"),
		Tags:                       map[string]string{"team": "infra"},
	}
	return nc
}

func reqIn(key string, vals ...string) nsv1.NodeSelectorRequirementWithMinValues {
	return nsv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: vals}
}

// newClaim is a claim of the default pool and node class.
func newClaim(name string, reqs ...nsv1.NodeSelectorRequirementWithMinValues) *nsv1.NodeClaim {
	c := &nsv1.NodeClaim{}
	c.Name = name
	c.UID = types.UID("uid-" + name)
	c.CreationTimestamp = metav1.NewTime(epoch)
	c.Labels = map[string]string{nsv1.LabelNodePool: "default", "team": "a"}
	c.Spec.NodeClassRef = &nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	c.Spec.Requirements = reqs
	c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	return c
}

func (e *env) create(claim *nsv1.NodeClaim) *nsv1.NodeClaim {
	e.t.Helper()
	out, err := e.p.Create(e.ctx, claim)
	if err != nil {
		e.t.Fatalf("Create(%s): %v", claim.Name, err)
	}
	return out
}

// testPool is the default pool on the default node class.
func testPool() *nsv1.NodePool {
	p := &nsv1.NodePool{}
	p.Name = "default"
	p.Spec.Template.Spec.NodeClassRef = &nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	return p
}

// sized gives a claim requests, as the provisioner does: without them every
// type fits and the cheapest on-demand offering (a nano) would price out
// almost every spot offering.
func sized(c *nsv1.NodeClaim) *nsv1.NodeClaim {
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m"), corev1.ResourceMemory: resource.MustParse("6Gi")}
	return c
}
