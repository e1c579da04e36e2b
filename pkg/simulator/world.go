package simulator

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	smithyrand "github.com/aws/smithy-go/rand"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers"
	nsevents "github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/interruption"
	pricingctrl "github.com/nodesmith/nodesmith/pkg/controllers/pricing"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	interruptionpolicy "github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	awsprovider "github.com/nodesmith/nodesmith/pkg/providers/aws"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
	"github.com/nodesmith/nodesmith/pkg/simulator/driver"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// setup builds the simulated AWS from the catalog and the scenario, serves
// it on a loopback port, connects the AWS provider to it through the SDK,
// builds the API server and Nodesmith's controllers on it, and schedules
// the scenario's workloads and events.
func (s *Sim) setup() error {
	if err := s.setupAWS(); err != nil {
		return err
	}
	if err := s.setupKube(); err != nil {
		return err
	}
	return s.populate()
}

func (s *Sim) setupAWS() error {
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
		Specs:           fakeaws.SpecsFromCatalog(specs, w.Region, w.Zones),
		DefaultCapacity: w.DefaultCapacity,
		BootDelay:       w.BootDelay.Duration,
		BootJitter:      w.BootJitter.Duration,
		ShutdownDelay:   w.ShutdownDelay.Duration,
		Seed:            s.seed,
		ClusterName:     w.ClusterName,
		// EventBridge's rules deliver the interruption notices here.
		InterruptionQueue: interruptionQueue,
	})
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
	for _, cr := range w.CapacityReservations {
		r := fakeaws.CapacityReservation{ID: cr.ID, InstanceType: cr.InstanceType, Zone: cr.Zone, Total: cr.Count, Type: cr.Type,
			MatchCriteria: cr.MatchCriteria, Tags: cr.Tags}
		if cr.Ends.Duration > 0 {
			r.End = s.clock.Now().Add(cr.Ends.Duration)
		}
		id, err := s.world.AddCapacityReservation(r)
		if err != nil {
			return fmt.Errorf("capacity reservation of %d %s in %s: %w", cr.Count, cr.InstanceType, cr.Zone, err)
		}
		if cr.Type == fakeaws.ReservationTypeCapacityBlock {
			s.reclaimAt[id] = cr.Ends.Duration - fakeaws.CapacityBlockReclaim
		}
	}
	s.world.Subscribe(func(e fakeaws.Event) {
		s.worldMu.Lock()
		s.worldEvents = append(s.worldEvents, e)
		s.worldMu.Unlock()
	})
	s.server = fakeaws.NewServer(s.world)
	// The SDK's requests reach the simulated AWS in process, on this
	// goroutine, with no socket: over loopback TCP, net/http's connection
	// goroutines race the SDK now and then, a call fails and is retried or
	// given up (see fakeaws.InProcessClient), and a run on a loaded machine
	// stops matching the one before. The requests and answers are the same
	// bytes either way; the endpoint only names the host requests carry.
	var httpClient aws.HTTPClient = s.server.InProcess()
	if s.opts.wrapHTTP != nil {
		httpClient = s.opts.wrapHTTP(httpClient)
	}
	cfg := aws.Config{
		Region:       w.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("simulated", "simulated", ""),
		BaseEndpoint: aws.String(simulatedEndpoint),
		HTTPClient:   httpClient,
		// Retries are for the simulated AWS's injected faults; any other
		// retry means the wire failed, which the report must show.
		Retryer: awsprovider.RetryOptions{MaxAttempts: 3, MaxBackoff: 10 * time.Millisecond, OnRetry: s.sdkRetried}.Retryer(),
	}
	provider, err := awsprovider.New(awsprovider.Config{
		EC2: ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			// The SDK fills a random client token into calls that take one
			// and were not given one (CreateLaunchTemplate); from the seed,
			// the same run sends the same bytes.
			o.IdempotencyTokenProvider = smithyrand.NewUUIDIdempotencyToken(rand.New(rand.NewSource(s.seed)))
		}),
		SSM:     ssm.NewFromConfig(cfg),
		Pricing: pricing.NewFromConfig(cfg),
		Cluster: awsprovider.Cluster{Name: w.ClusterName, Endpoint: "https://" + w.ClusterName + ".simulated", CABundle: "c2ltdWxhdGVk"},
		Clock:   s.clock,
		NodeClasses: func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
			nc := &awsv1.EC2NodeClass{}
			if err := s.kube.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
				return nil, err
			}
			return nc, nil
		},
		// As cmd/controller builds it: offerings and prices come from the
		// (simulated) account once read, the snapshot until then.
		Options: awsprovider.Options{Region: w.Region, Specs: specs, DiscoverInstanceTypes: true, OnEvent: s.providerEvent},
	})
	if err != nil {
		return fmt.Errorf("building the AWS provider: %w", err)
	}
	s.provider = provider
	s.awsConfig = cfg

	sqsClient := sqs.NewFromConfig(cfg)
	for _, q := range s.sc.Queues {
		s.world.CreateQueue(q.Name, map[string]string{"VisibilityTimeout": fmt.Sprint(int(q.VisibilityTimeout.Seconds()))})
		out, err := sqsClient.GetQueueUrl(s.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Name)})
		if err != nil {
			return fmt.Errorf("resolving queue %s: %w", q.Name, err)
		}
		sq := &simQueue{s: s, name: q.Name, url: aws.ToString(out.QueueUrl), visibility: q.VisibilityTimeout.Duration, client: sqsClient}
		s.queues[q.Name] = sq
		s.qorder = append(s.qorder, sq)
	}
	for _, qw := range s.sc.QueueWorkers {
		s.queues[qw.Queue].waitTime = int32(qw.WaitTime.Seconds())
	}
	return nil
}

// Scheme holds the kinds the simulated API server stores.
func Scheme() (*runtime.Scheme, error) {
	sch := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nsv1.AddToScheme, awsv1.AddToScheme, cbv1.AddToScheme, prv1.AddToScheme, nsv1alpha1.AddToScheme} {
		if err := add(sch); err != nil {
			return nil, err
		}
	}
	return sch, nil
}

// setupKube builds the API server, Nodesmith's controllers on it (the same
// set cmd/controller registers with its manager, with its defaults) and the
// parts of the cluster the simulator plays.
func (s *Sim) setupKube() error {
	sch, err := Scheme()
	if err != nil {
		return err
	}
	s.api = apiserver.New(sch, s.clock, s.seed)
	s.kube = s.api.Client()
	if err := state.IndexFields(s.ctx, s.api); err != nil {
		return err
	}
	s.hours = newHourly(s)
	s.api.SetEviction(func(p *corev1.Pod) error {
		err := s.evictionAllowed(p)
		if err == nil && p.DeletionTimestamp == nil {
			s.hours.evicted()
		}
		return err
	})
	s.recorder = newRecorder(s)
	s.providerNotices = nsevents.ProviderNotices(nsevents.NewRecorder(s.recorder, s.clock, 5*time.Minute), awsprovider.WarningEvent)
	s.intr = newInterruptions(s)
	s.bill = newBilling(s)
	s.sched = newSchedulerLoop(s)
	s.kubelets = newKubelets(s)
	s.budgets = newBudgets(s)
	s.api.Watch(s.onChange)

	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return err
	}
	s.held = newHeld(m)
	gates := controllers.DefaultFeatureGates()
	for g, on := range s.sc.Controller.FeatureGates {
		if _, ok := gates[g]; !ok {
			return fmt.Errorf("scenario controller.featureGates: unknown gate %q (known: %v)", g, gates)
		}
		gates[g] = on
	}
	var intr *controllers.Interruption
	if s.sc.Controller.Interruptions() {
		opts := interruption.DefaultOptions(interruptionQueue)
		// One step per message batch, the long poll played by waking the
		// queue when the simulated AWS publishes a notice (see worldEvent).
		opts.WaitTime, opts.IdlePoll, opts.Workers = 0, interruption.DefaultWaitTime, 1
		if m := s.sc.Controller.RebalanceMode; m != "" {
			opts.Rebalance = interruptionpolicy.RebalanceMode(m)
		}
		intr = &controllers.Interruption{SQS: sqs.NewFromConfig(s.awsConfig), Options: opts, Fresh: s.kube,
			Unavailable: s.provider.Unavailable(), History: s.provider.Interruptions()}
	}
	claims := 0
	set, err := controllers.New(controllers.Config{
		Kube: s.kube, Shared: s.api, Cloud: s.provider, NodeClasses: s.provider, Clock: s.clock, Events: s.recorder,
		Metrics:      m,
		Interruption: intr,
		Options: controllers.Options{
			FeatureGates: gates,
			// One at a time, in order: the same writes as the controller's
			// parallel ones, in a repeatable order.
			LaunchWorkers: 1,
			NewClaimName: func(pool string) string {
				claims++
				return fmt.Sprintf("%s-%05d", pool, claims)
			},
		},
	})
	if err != nil {
		return err
	}
	s.controllers = set
	// AWS's own loops, registered next to the set as cmd/controller does:
	// the live catalog's refreshes and the launch-template collector.
	pm, err := pricingctrl.NewMetrics(reg)
	if err != nil {
		return err
	}
	catalogLoops := pricingctrl.Singletons(s.provider, s.kube, nsevents.NewRecorder(s.recorder, s.clock, 5*time.Minute), s.clock, pm, pricingctrl.Intervals{})
	s.driver, err = driver.New(s.ctx, s.clock, s.api, set.Controllers, append(set.Singletons, catalogLoops...))
	if err != nil {
		return err
	}
	s.driver.OnError = func(name string, req reconcile.Request, err error) {
		key := name + "/" + req.String()
		s.noteOnce("error:"+name+":"+err.Error(), "%s %s: %v", name, key, truncate(err.Error(), 240))
	}
	for i := range s.sc.NodeClasses {
		nc := s.sc.NodeClasses[i].DeepCopy()
		if s.opts.IgnoreCommitments {
			nc.Spec.CapacityReservationSelectorTerms = nil
		}
		if err := s.kube.Create(s.ctx, nc); err != nil {
			return fmt.Errorf("creating EC2NodeClass %s: %w", s.sc.NodeClasses[i].Name, err)
		}
	}
	for i := range s.sc.NodePools {
		if err := s.kube.Create(s.ctx, s.sc.NodePools[i].DeepCopy()); err != nil {
			return fmt.Errorf("creating NodePool %s: %w", s.sc.NodePools[i].Name, err)
		}
	}
	for i := range s.sc.DaemonSets {
		ds := s.sc.DaemonSets[i].DeepCopy()
		if ds.Namespace == "" {
			ds.Namespace = "kube-system"
		}
		if err := s.kube.Create(s.ctx, ds); err != nil {
			return fmt.Errorf("creating DaemonSet %s: %w", ds.Name, err)
		}
		s.dsets = append(s.dsets, newDaemonSet(s, ds))
	}
	for i := range s.sc.PodDisruptionBudgets {
		pdb := s.sc.PodDisruptionBudgets[i].DeepCopy()
		if pdb.Namespace == "" {
			pdb.Namespace = "default"
		}
		if err := s.kube.Create(s.ctx, pdb); err != nil {
			return fmt.Errorf("creating PodDisruptionBudget %s: %w", pdb.Name, err)
		}
	}
	for i := range s.sc.PodTemplates {
		pt := s.sc.PodTemplates[i].DeepCopy()
		if pt.Namespace == "" {
			pt.Namespace = "default"
		}
		if err := s.kube.Create(s.ctx, pt); err != nil {
			return fmt.Errorf("creating PodTemplate %s: %w", pt.Name, err)
		}
	}
	for i := range s.sc.NodeOverlays {
		if err := s.kube.Create(s.ctx, s.sc.NodeOverlays[i].DeepCopy()); err != nil {
			return fmt.Errorf("creating NodeOverlay %s: %w", s.sc.NodeOverlays[i].Name, err)
		}
	}
	cs, errs := catalog.CommitmentsFrom(s.sc.Commitments)
	if len(errs) > 0 {
		return errs[0]
	}
	s.commitments = cs // the account pays them even when the controllers are not told
	for i := range s.sc.Commitments {
		if s.opts.IgnoreCommitments {
			continue
		}
		if err := s.kube.Create(s.ctx, s.sc.Commitments[i].DeepCopy()); err != nil {
			return fmt.Errorf("creating Commitment %s: %w", s.sc.Commitments[i].Name, err)
		}
	}
	for i := range s.sc.CapacityBuffers {
		b := s.sc.CapacityBuffers[i].DeepCopy()
		if b.Namespace == "" {
			b.Namespace = "default"
		}
		if err := s.kube.Create(s.ctx, b); err != nil {
			return fmt.Errorf("creating CapacityBuffer %s: %w", b.Name, err)
		}
	}
	return s.createStorage()
}

// createStorage creates the scenario's StorageClasses, PersistentVolumes
// and PersistentVolumeClaims.
func (s *Sim) createStorage() error {
	for i := range s.sc.StorageClasses {
		if err := s.kube.Create(s.ctx, s.sc.StorageClasses[i].DeepCopy()); err != nil {
			return fmt.Errorf("creating StorageClass %s: %w", s.sc.StorageClasses[i].Name, err)
		}
	}
	for i := range s.sc.PersistentVolumes {
		if err := s.kube.Create(s.ctx, s.sc.PersistentVolumes[i].DeepCopy()); err != nil {
			return fmt.Errorf("creating PersistentVolume %s: %w", s.sc.PersistentVolumes[i].Name, err)
		}
	}
	for i := range s.sc.PersistentVolumeClaims {
		c := s.sc.PersistentVolumeClaims[i].DeepCopy()
		if c.Namespace == "" {
			c.Namespace = "default"
		}
		if err := s.kube.Create(s.ctx, c); err != nil {
			return fmt.Errorf("creating PersistentVolumeClaim %s: %w", c.Name, err)
		}
	}
	return nil
}

// populate adds the system nodes, the workloads, the scripted events and
// the first sample.
func (s *Sim) populate() error {
	for _, sn := range s.sc.SystemNodes {
		if err := s.kubelets.addSystemNode(sn); err != nil {
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

// sdkRetried notes a retry of the SDK's: in a simulation nothing but an
// injected fault should cause one.
func (s *Sim) sdkRetried(service, operation, reason string) {
	s.noteOnce("retry:"+service+":"+operation+":"+reason, "the AWS SDK retried %s %s (%s)", service, operation, reason)
	if s.opts.onRetry != nil {
		s.opts.onRetry(service, operation, reason)
	}
}

// providerEvent turns the provider's decisions (capacity and on-demand
// fallbacks, adoptions) into Events on the claim, as the controller
// records them (events.ProviderNotices).
func (s *Sim) providerEvent(claim *nsv1.NodeClaim, reason, message string) {
	s.providerNotices(claim, reason, message)
}

// drainWorldEvents hands the instance events the simulated AWS published
// to the kubelets and the billing.
func (s *Sim) drainWorldEvents() {
	for {
		s.worldMu.Lock()
		evs := s.worldEvents
		s.worldEvents = nil
		s.worldMu.Unlock()
		if len(evs) == 0 {
			return
		}
		for _, e := range evs {
			s.worldEvent(e)
		}
	}
}

func (s *Sim) worldEvent(e fakeaws.Event) {
	in := e.Instance
	switch e.Kind {
	case fakeaws.EventLaunched:
		s.bill.launched(in)
		// The world boots the instance at its BootAt: wake up then.
		s.schedule(in.BootAt.Sub(Epoch), prioNormal, func() {})
	case fakeaws.EventRunning:
		s.kubelets.instanceRunning(in)
	case fakeaws.EventInterrupted:
		s.note("spot interruption notice for %s (%s in %s); the instance goes away at t=%s", strings.ToLower(in.ID), in.Type, in.Zone,
			output.FormatDuration(in.InterruptAt.Sub(Epoch)))
		s.schedule(in.InterruptAt.Sub(Epoch), prioNormal, func() {})
		s.intr.notice("spot interruption", in)
		s.noticePublished()
	case fakeaws.EventRebalance:
		s.intr.notice("rebalance recommendation", in)
		s.noticePublished()
	case fakeaws.EventScheduled:
		s.noticePublished()
	case fakeaws.EventTerminating:
		s.noticePublished() // EC2's state-change notification
		s.intr.gone(in)
		s.bill.stopping(in)
		s.kubelets.instanceStopped(in)
		s.schedule(s.now+s.sc.World.ShutdownDelay.Duration, prioNormal, func() {})
	case fakeaws.EventTerminated:
		s.bill.terminated(in)
		s.kubelets.instanceTerminated(in)
	}
}

// simulatedEndpoint is the URL the SDK clients are given; nothing listens
// on it (the requests are served in process).
const simulatedEndpoint = "http://aws.simulated.invalid"

// interruptionQueue is the simulated account's EventBridge target.
const interruptionQueue = "nodesmith-interruptions"

// noticePublished returns the interruption handler's long poll: the
// simulated AWS just put a message on its queue.
func (s *Sim) noticePublished() {
	if s.driver != nil {
		s.driver.Wake(interruptionQueueSingleton)
	}
}

// interruptionQueueSingleton is the name the queue consumer runs under.
const interruptionQueueSingleton = "interruption.queue"
