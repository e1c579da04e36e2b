package simulator

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning/batcher"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// Epoch is the wall-clock time virtual t=0 maps to. A fixed instant keeps
// timestamps (and anything derived from them) the same from run to run.
var Epoch = time.Date(2026, time.January, 5, 9, 0, 0, 0, time.UTC)

// Options tune a run.
type Options struct {
	// Seed overrides the scenario's seed when set.
	Seed *int64
	// Progress, when set, is called about every virtual minute with the
	// latest sample (the command prints a progress line from it).
	Progress func(output.Sample)
}

// Sim is one run. It is single-threaded: every event runs on the caller's
// goroutine in (time, priority, insertion) order.
type Sim struct {
	ctx   context.Context
	sc    *scenario.Scenario
	opts  Options
	seed  int64
	clock *clocktesting.FakeClock
	now   time.Duration

	events eventQueue
	seq    uint64
	err    error

	world       *fakeaws.World
	server      *fakeaws.Server
	cloud       cloudprovider.CloudProvider
	catalog     *catalog.Catalog
	unavailable *catalog.UnavailableOfferings
	// worldEvents are instance events from the simulated AWS, queued by its
	// subscriber and handled by the loop.
	worldMu        sync.Mutex
	worldEvents    []fakeaws.Event
	providerEvents []providerEvent

	pools       []*nsv1.NodePool
	nodeClasses map[string]*awsv1.EC2NodeClass
	daemonSets  []*appsv1.DaemonSet
	dsProbes    []*pod
	// refreshPrices is the provider's pricing refresh (spot prices).
	refreshPrices func(context.Context) error

	nodes           []*node
	nodesByName     map[string]*node
	nodesByInstance map[string]*node
	pending         []*pod
	podCount        [podGone + 1]int
	podSerial       int
	podsCreated     int
	binderQueued    bool

	window      *batcher.Window
	timeouts    lifecycle.Timeouts
	windowArmed bool
	claimSerial int
	// batchFailures and batchFirstErr summarise one batch's failed launches.
	batchFailures int
	batchFirstErr string
	iceCached     int

	replicaSets []*replicaSet
	jobs        []*job
	queues      map[string]*simQueue
	queueOrder  []*simQueue

	launches []output.Launch
	failures map[string]int
	notes    []string
	noted    map[string]bool
	samples  []output.Sample

	firstPodRunning, allPodsRunning, queueEmpty, backToBase output.Milestone
	lastProgress                                            time.Duration
}

func reached(at time.Duration) output.Milestone { return output.Milestone{At: at, Reached: true} }

// Run simulates the scenario and returns what it measured.
func Run(ctx context.Context, sc *scenario.Scenario, opts Options) (*output.Result, error) {
	s := &Sim{
		ctx:             ctx,
		sc:              sc,
		opts:            opts,
		seed:            sc.Seed,
		clock:           clocktesting.NewFakeClock(Epoch),
		nodesByName:     map[string]*node{},
		nodesByInstance: map[string]*node{},
		nodeClasses:     map[string]*awsv1.EC2NodeClass{},
		queues:          map[string]*simQueue{},
		failures:        map[string]int{},
		window:          batcher.NewWindow(batcher.DefaultIdle, batcher.DefaultMax),
		timeouts:        lifecycle.DefaultTimeouts(),
	}
	if opts.Seed != nil {
		s.seed = *opts.Seed
	}
	if err := s.setup(); err != nil {
		return nil, err
	}
	defer s.server.Close()
	s.loop()
	if s.err != nil {
		return nil, s.err
	}
	return s.result(), nil
}

// fail stops the run with err (the first error wins).
func (s *Sim) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("at t=%s: %w", output.FormatDuration(s.now), err)
	}
}

func (s *Sim) loop() {
	end := s.sc.Duration.Duration
	for s.events.Len() > 0 && s.err == nil {
		e := heap.Pop(&s.events).(*event)
		if e.at > end {
			break
		}
		if e.at != s.now {
			s.observe()
			s.now = e.at
			s.clock.SetTime(Epoch.Add(e.at))
			s.world.Tick()
			s.drainWorldEvents()
		}
		if err := s.ctx.Err(); err != nil {
			s.fail(err)
			return
		}
		e.fn()
		s.drainWorldEvents()
	}
	s.observe()
}

// observe records the milestones reached at the end of an instant.
func (s *Sim) observe() {
	desired := s.desired()
	if !s.allPodsRunning.Reached && desired > 0 && s.podCount[podRunning] >= desired &&
		s.podCount[podPending]+s.podCount[podStarting] == 0 {
		s.allPodsRunning = reached(s.now)
	}
	if !s.queueEmpty.Reached && len(s.queueOrder) > 0 {
		sent, empty := false, true
		for _, q := range s.queueOrder {
			sent = sent || q.everSent
			if v, f := s.world.QueueDepth(q.name); v+f > 0 {
				empty = false
			}
		}
		if sent && empty {
			s.queueEmpty = reached(s.now)
		}
	}
	if len(s.launches) > 0 {
		alive := 0
		for _, n := range s.nodes {
			if !n.system() && !n.gone {
				alive++
			}
		}
		switch {
		case alive > 0:
			s.backToBase = output.Milestone{}
		case !s.backToBase.Reached:
			s.backToBase = reached(s.now)
		}
	}
}

// desired is how many workload pods the controllers want right now.
func (s *Sim) desired() int {
	n := 0
	for _, rs := range s.replicaSets {
		n += int(rs.desired)
	}
	for _, j := range s.jobs {
		n += int(j.wanted())
	}
	return n
}

// sample records one timeline row and schedules the next.
func (s *Sim) sample() {
	smp := output.Sample{
		T:               s.now,
		DesiredReplicas: s.desired(),
		RunningPods:     s.podCount[podRunning] + s.podCount[podTerminating],
		PendingPods:     s.podCount[podPending] + s.podCount[podStarting],
	}
	for _, q := range s.queueOrder {
		v, f := s.world.QueueDepth(q.name)
		smp.QueueVisible += int64(v)
		smp.QueueInFlight += int64(f)
	}
	for _, n := range s.nodes {
		if n.gone {
			continue
		}
		if n.capType == nsv1.CapacityTypeSpot {
			smp.NodesSpot++
		} else {
			smp.NodesOnDemand++
		}
		if !n.deleting {
			smp.CostPerHour += n.price
		}
	}
	s.samples = append(s.samples, smp)
	if s.opts.Progress != nil && (s.now-s.lastProgress >= time.Minute || s.now == 0) {
		s.lastProgress = s.now
		s.opts.Progress(smp)
	}
	if next := s.now + s.sc.SampleInterval.Duration; next <= s.sc.Duration.Duration {
		s.schedule(next, prioSample, s.sample)
	}
}

// accrue brings a node's cost up to now at its current price; billing stops
// once the instance is being terminated.
func (s *Sim) accrue(n *node) {
	if !n.deleting && !n.gone {
		n.cost += n.price * (s.now - n.costSince).Hours()
	}
	n.costSince = s.now
}

func (s *Sim) result() *output.Result {
	r := &output.Result{
		Scenario:        s.sc.Name,
		Description:     s.sc.Description,
		Seed:            s.seed,
		Duration:        s.sc.Duration.Duration,
		Samples:         s.samples,
		LaunchFailures:  s.failures,
		PodsCreated:     s.podsCreated,
		FirstPodRunning: s.firstPodRunning,
		AllPodsRunning:  s.allPodsRunning,
		QueueEmpty:      s.queueEmpty,
		BackToBase:      s.backToBase,
		Notes:           s.notes,
	}
	r.QueueEmpty.NotApplicable = len(s.queueOrder) == 0
	for _, n := range s.nodes {
		s.accrue(n)
		if n.system() {
			r.SystemCost += n.cost
			continue
		}
		l := &s.launches[n.launch]
		l.Cost = n.cost
		if !n.gone {
			l.TerminatedAt = s.now
		}
	}
	for _, l := range s.launches {
		r.Cost += l.Cost
		r.OnDemandCost += l.OnDemandPrice * l.Hours()
	}
	r.Launches = s.launches
	return r
}

// note records a decision worth reading in the report.
func (s *Sim) note(format string, a ...any) {
	s.notes = append(s.notes, fmt.Sprintf("t=%s: ", output.FormatDuration(s.now))+fmt.Sprintf(format, a...))
}
