package simulator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	awsprovider "github.com/nodesmith/nodesmith/pkg/providers/aws"
)

// setup builds the simulated AWS from the catalog and the scenario, serves
// it on a loopback port, connects the AWS provider to it through the SDK,
// and schedules the scenario's workloads and events.
func (s *Sim) setup() error {
	w := s.sc.World
	specs, err := catalog.Specs()
	if err != nil {
		return fmt.Errorf("loading instance specs: %w", err)
	}
	s.catalog = catalog.FromSpecs(specs, catalog.Options{Region: w.Region, Zones: w.Zones})
	s.world = fakeaws.NewWorld(fakeaws.Options{
		Clock:           s.clock,
		Region:          w.Region,
		Zones:           w.Zones,
		Specs:           worldSpecs(s.catalog),
		DefaultCapacity: w.DefaultCapacity,
		BootDelay:       w.BootDelay.Duration,
		ShutdownDelay:   w.ShutdownDelay.Duration,
		Seed:            s.seed,
		ClusterName:     w.ClusterName,
	})
	// The catalog's zone-by-zone spot prices are the market's opening prices.
	for _, it := range s.catalog.Types() {
		for _, o := range it.Offerings {
			if o.CapacityType == nsv1.CapacityTypeSpot {
				s.world.SetPrice(it.Name, o.Zone, fakeaws.CapacitySpot, o.Price)
			}
		}
	}
	for _, o := range w.Pools {
		s.forPools(o.InstanceType, o.Zone, o.CapacityType, func(p fakeaws.Pool) {
			if o.Capacity != nil {
				s.world.SetCapacity(p.InstanceType, p.Zone, p.CapacityType, *o.Capacity)
			}
			if o.Price != nil {
				s.world.SetPrice(p.InstanceType, p.Zone, p.CapacityType, *o.Price)
			}
		})
	}
	s.world.Subscribe(func(e fakeaws.Event) {
		s.worldMu.Lock()
		s.worldEvents = append(s.worldEvents, e)
		s.worldMu.Unlock()
	})
	s.server = fakeaws.NewServer(s.world)
	endpoint := s.server.Start()

	cfg := aws.Config{
		Region:       w.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("simulated", "simulated", ""),
		BaseEndpoint: aws.String(endpoint),
		Retryer:      awsprovider.NewRetryer(3, 10*time.Millisecond),
	}
	for i := range s.sc.NodeClasses {
		nc := &s.sc.NodeClasses[i]
		s.nodeClasses[nc.Name] = nc
	}
	for i := range s.sc.NodePools {
		s.pools = append(s.pools, &s.sc.NodePools[i])
	}
	for i := range s.sc.DaemonSets {
		ds := &s.sc.DaemonSets[i]
		s.daemonSets = append(s.daemonSets, ds)
		// A probe pod answers "would this DaemonSet run there" without
		// building a pod per node.
		probe := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
		s.dsProbes = append(s.dsProbes, &pod{obj: probe, affinity: nodeaffinity.GetRequiredNodeAffinity(probe)})
	}
	// The ICE cache with its default TTL, on the virtual clock.
	s.unavailable = catalog.NewUnavailableOfferings(s.clock, 0)
	provider, err := awsprovider.New(awsprovider.Config{
		Unavailable: s.unavailable,
		EC2:         ec2.NewFromConfig(cfg),
		SSM:         ssm.NewFromConfig(cfg),
		Cluster:     awsprovider.Cluster{Name: w.ClusterName, Endpoint: "https://" + w.ClusterName + ".simulated", CABundle: "c2ltdWxhdGVk"},
		Clock:       s.clock,
		NodeClasses: func(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
			nc, ok := s.nodeClasses[name]
			if !ok {
				return nil, fmt.Errorf("EC2NodeClass %s not found", name)
			}
			return nc, nil
		},
		// Batching waits on the clock, which only moves between events: each
		// claim is its own CreateFleet call.
		Options: awsprovider.Options{Region: w.Region, Specs: specs, OnEvent: s.providerEvent},
	})
	if err != nil {
		return fmt.Errorf("building the AWS provider: %w", err)
	}
	if err := provider.Refresh(s.ctx); err != nil {
		return fmt.Errorf("reading spot prices from the simulated AWS: %w", err)
	}
	s.cloud = provider
	s.refreshPrices = provider.Refresh

	sqsClient := sqs.NewFromConfig(cfg)
	for _, q := range s.sc.Queues {
		s.world.CreateQueue(q.Name, map[string]string{"VisibilityTimeout": fmt.Sprint(int(q.VisibilityTimeout.Seconds()))})
		out, err := sqsClient.GetQueueUrl(s.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Name)})
		if err != nil {
			return fmt.Errorf("resolving queue %s: %w", q.Name, err)
		}
		sq := &simQueue{s: s, name: q.Name, url: aws.ToString(out.QueueUrl), visibility: q.VisibilityTimeout.Duration, client: sqsClient}
		s.queues[q.Name] = sq
		s.queueOrder = append(s.queueOrder, sq)
	}
	for _, qw := range s.sc.QueueWorkers {
		s.queues[qw.Queue].waitTime = int32(qw.WaitTime.Seconds())
	}
	return s.populate()
}

// populate adds the system nodes, the workloads, the scripted events, the
// disruption loop and the first sample.
func (s *Sim) populate() error {
	for _, sn := range s.sc.SystemNodes {
		if err := s.addSystemNode(sn); err != nil {
			return err
		}
	}
	for _, d := range s.sc.Deployments {
		s.startDeployment(d)
	}
	for _, qw := range s.sc.QueueWorkers {
		s.startQueueWorker(qw)
	}
	for _, j := range s.sc.Jobs {
		s.startJob(j)
	}
	for _, e := range s.sc.Events {
		e := e
		s.schedule(e.At.Duration, prioNormal, func() { s.scripted(e) })
	}
	s.schedule(0, prioSample, s.sample)
	return nil
}

// worldSpecs describes the catalog's types to the simulated AWS, offered in
// the zones the catalog offers them in.
func worldSpecs(c *catalog.Catalog) []fakeaws.Spec {
	var out []fakeaws.Spec
	for _, it := range c.Types() {
		arch := "x86_64"
		if it.Arch == "arm64" {
			arch = "arm64"
		}
		sp := fakeaws.Spec{
			Name: it.Name, Arch: arch, VCPU: it.VCPU, MemoryMiB: it.MemoryMiB,
			GPUCount: it.GPUCount, GPUName: it.GPUName, GPUMfr: it.GPUManufacturer, GPUMemMiB: it.GPUMemoryMiB,
			MaxENIs: it.MaxENIs, IPv4PerENI: it.IPv4PerENI,
			NetworkPerformance: fmt.Sprintf("%d Megabit", it.NetworkBandwidthMbps),
			Hypervisor:         it.Hypervisor, BareMetal: it.BareMetal, LocalNVMeGB: it.LocalNVMeGB,
			OnDemandPrice: it.OnDemandPrice, Zones: it.Offerings.Zones(), SpotUnsupported: true,
		}
		for _, o := range it.Offerings {
			if o.CapacityType == nsv1.CapacityTypeSpot {
				sp.SpotUnsupported = false
				sp.SpotPrice = o.Price
				break
			}
		}
		out = append(out, sp)
	}
	return out
}

// forPools calls fn for every pool of the simulated AWS the match fields
// select (empty matches all; a trailing * on the type is a prefix match).
func (s *Sim) forPools(instanceType, zone, capacityType string, fn func(fakeaws.Pool)) int {
	n := 0
	for _, p := range s.world.Pools() {
		if !matchType(instanceType, p.InstanceType) || (zone != "" && zone != p.Zone) ||
			(capacityType != "" && capacityType != p.CapacityType) {
			continue
		}
		fn(p)
		n++
	}
	return n
}

func matchType(pattern, name string) bool {
	if pattern == "" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return pattern == name
}

// daemonSetsFor are the DaemonSets whose pods would run on a node with these
// taints and labels.
func (s *Sim) daemonSetsFor(n *node) []*appsv1.DaemonSet {
	var out []*appsv1.DaemonSet
	for i, ds := range s.daemonSets {
		p := s.dsProbes[i]
		if tolerates(p.obj.Spec.Tolerations, n.obj.Spec.Taints) {
			if ok, err := p.affinity.Match(n.obj); ok && err == nil {
				out = append(out, ds)
			}
		}
	}
	return out
}

// providerEvent collects the decisions the provider reports (capacity and
// on-demand fallbacks) so they appear in the report, as the controller
// would record them as Events on the claim.
func (s *Sim) providerEvent(claim *nsv1.NodeClaim, reason, message string) {
	s.worldMu.Lock()
	s.providerEvents = append(s.providerEvents, providerEvent{claim: claim.Name, reason: reason, message: message})
	s.worldMu.Unlock()
}

type providerEvent struct{ claim, reason, message string }

// drainProviderEvents turns one batch's provider events into notes, one per
// reason with a count and the first message.
func (s *Sim) drainProviderEvents() {
	s.worldMu.Lock()
	evs := s.providerEvents
	s.providerEvents = nil
	s.worldMu.Unlock()
	counts := map[string]int{}
	first := map[string]providerEvent{}
	var order []string
	for _, e := range evs {
		if counts[e.reason] == 0 {
			order = append(order, e.reason)
			first[e.reason] = e
		}
		counts[e.reason]++
	}
	for _, r := range order {
		e := first[r]
		s.note("%s ×%d; the first, %s: %s", r, counts[r], e.claim, truncate(e.message, 240))
	}
}
