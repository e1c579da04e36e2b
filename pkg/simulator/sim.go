package simulator

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/go-logr/logr"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	awsprovider "github.com/nodesmith/nodesmith/pkg/providers/aws"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
	"github.com/nodesmith/nodesmith/pkg/simulator/driver"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// Epoch is the wall-clock time virtual t=0 maps to. A fixed instant keeps
// timestamps (and anything derived from them) the same from run to run.
var Epoch = time.Date(2026, time.January, 5, 9, 0, 0, 0, time.UTC)

// maxPassesPerInstant bounds how often one virtual instant may bounce
// between the world and the controllers before the run is declared stuck.
const maxPassesPerInstant = 10000

// Options tune a run.
type Options struct {
	// Seed overrides the scenario's seed when set.
	Seed *int64
	// Progress, when set, is called about every virtual minute with the
	// latest sample (the command prints a progress line from it).
	Progress func(output.Sample)
	// IgnoreCommitments plays a provisioner that ignores what the account
	// already pays for: the node classes are created without their
	// capacityReservationSelectorTerms and no Commitment object is
	// created. The account still holds them — the simulated AWS has the
	// reservations (an open one still takes a matching on-demand launch,
	// as EC2 does) and the report charges the reservations and the
	// commitments, the commitments covering whatever on-demand the run
	// launched, as AWS bills them — so the run's total is what ignoring
	// them costs.
	IgnoreCommitments bool

	// wrapHTTP, when set, wraps the client that carries the SDK's requests
	// to the simulated AWS (the determinism tests add latency and record
	// the calls).
	wrapHTTP func(aws.HTTPClient) aws.HTTPClient
	// onRetry, when set, hears every retry the SDK makes.
	onRetry func(service, operation, reason string)
}

// Sim is one run. It is single-threaded: world events run on the caller's
// goroutine in (time, priority, insertion) order, and after each instant's
// events the driver runs the controllers' reconciles until they are quiet.
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

	// commitments are the scenario's Savings Plans and RIs, for the
	// report's commitment figures (commitments.go).
	commitments []catalog.Commitment
	// reclaimAt is when the simulated AWS reclaims each Capacity Block's
	// instances (its end less fakeaws.CapacityBlockReclaim), by id.
	reclaimAt map[string]time.Duration

	// AWS: the simulated world, its HTTP front end, and the provider the
	// controllers use through the real SDK.
	world     *fakeaws.World
	server    *fakeaws.Server
	provider  *awsprovider.Provider
	awsConfig aws.Config
	catalog   *catalog.Catalog
	worldMu   sync.Mutex
	// worldEvents are instance events from the simulated AWS, queued by its
	// subscriber and handled by the loop.
	worldEvents []fakeaws.Event

	// Kubernetes: the API server, a client on it, and Nodesmith's
	// controllers run by the driver.
	api         *apiserver.Server
	kube        client.Client
	controllers *controllers.Set
	driver      *driver.Driver
	recorder    *recorder
	// providerNotices records the AWS provider's launch decisions.
	providerNotices func(*nsv1.NodeClaim, string, string)
	intr            *interruptions

	// The parts of the cluster that are not Nodesmith.
	sched    *schedulerLoop
	kubelets *kubelets
	pods     map[types.UID]*pod
	podCount [podGone + 1]int
	rsets    []*replicaSet
	jobs     []*job
	dsets    []*daemonSet
	budgets  *budgets
	queues   map[string]*simQueue
	qorder   []*simQueue

	bill  *billing
	hours *hourly
	held  *held

	failures map[string]int
	notes    []string
	noted    map[string]bool
	samples  []output.Sample

	podStarts                                               []output.PodStart
	podsCreated                                             int
	seqPods                                                 int
	firstPodRunning, allPodsRunning, queueEmpty, backToBase output.Milestone
	lastProgress                                            time.Duration
}

func reached(at time.Duration) output.Milestone { return output.Milestone{At: at, Reached: true} }

// Run simulates the scenario and returns what it measured.
func Run(ctx context.Context, sc *scenario.Scenario, opts Options) (*output.Result, error) {
	s := &Sim{
		// The controllers log through their context; a run's story is its
		// Events and timeline, so their logs are dropped.
		ctx:       log.IntoContext(ctx, logr.Discard()),
		sc:        sc,
		opts:      opts,
		seed:      sc.Seed,
		clock:     clocktesting.NewFakeClock(Epoch),
		pods:      map[types.UID]*pod{},
		queues:    map[string]*simQueue{},
		failures:  map[string]int{},
		reclaimAt: map[string]time.Duration{},
	}
	if opts.Seed != nil {
		s.seed = *opts.Seed
	}
	if err := s.setup(); err != nil {
		if s.server != nil {
			s.server.Close()
		}
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

// loop advances virtual time to the next world event or controller timer,
// runs every world event of that instant, then lets the controllers settle;
// it repeats at the same instant while either side has more to do.
func (s *Sim) loop() {
	end := s.sc.Duration.Duration
	passes := 0
	for s.err == nil {
		if err := s.ctx.Err(); err != nil {
			s.fail(err)
			return
		}
		if err := s.driver.Settle(); err != nil {
			s.fail(err)
			return
		}
		s.drainWorldEvents()
		next, ok := s.nextInstant()
		if !ok || next > end {
			break
		}
		if next == s.now {
			if passes++; passes > maxPassesPerInstant {
				s.fail(fmt.Errorf("virtual time is stuck: the world and the controllers keep waking each other"))
				return
			}
		} else {
			passes = 0
			s.observe()
			s.now = next
			s.clock.SetTime(Epoch.Add(next))
			s.world.Tick()
			s.drainWorldEvents()
		}
		for s.events.Len() > 0 && s.events[0].at == s.now && s.err == nil {
			e := heap.Pop(&s.events).(*event)
			e.fn()
			s.drainWorldEvents()
		}
	}
	s.observe()
}

// nextInstant is the earliest world event or controller timer.
func (s *Sim) nextInstant() (time.Duration, bool) {
	var next time.Duration
	ok := false
	if s.events.Len() > 0 {
		next, ok = s.events[0].at, true
	}
	if t, has := s.driver.NextTimer(); has {
		at := t.Sub(Epoch)
		if at < s.now {
			at = s.now
		}
		if !ok || at < next {
			next, ok = at, true
		}
	}
	return next, ok
}

// note records a decision worth reading in the report.
func (s *Sim) note(format string, a ...any) {
	s.notes = append(s.notes, fmt.Sprintf("t=%s: ", output.FormatDuration(s.now))+fmt.Sprintf(format, a...))
}

// noteOnce records a note the first time its key is seen.
func (s *Sim) noteOnce(key, format string, a ...any) {
	if s.noted == nil {
		s.noted = map[string]bool{}
	}
	if s.noted[key] {
		return
	}
	s.noted[key] = true
	s.note(format, a...)
}

func truncate(v string, n int) string {
	if len(v) <= n {
		return v
	}
	return v[:n] + "…"
}

// nodeOf reads a node from the API server (nil when gone).
func (s *Sim) nodeOf(name string) *corev1.Node {
	n := &corev1.Node{}
	if err := s.kube.Get(s.ctx, types.NamespacedName{Name: name}, n); err != nil {
		return nil
	}
	return n
}
