package controllers

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/overlay"
	"github.com/nodesmith/nodesmith/pkg/controllers/capacitybuffer"
	"github.com/nodesmith/nodesmith/pkg/controllers/costmetrics"
	"github.com/nodesmith/nodesmith/pkg/controllers/disruptor"
	nsevents "github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/garbagecollection"
	"github.com/nodesmith/nodesmith/pkg/controllers/interruption"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclaim"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclass"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeoverlay"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodepool"
	"github.com/nodesmith/nodesmith/pkg/controllers/podevents"
	"github.com/nodesmith/nodesmith/pkg/controllers/provisioner"
	"github.com/nodesmith/nodesmith/pkg/controllers/provisioningrequest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/controllers/staticpool"
	"github.com/nodesmith/nodesmith/pkg/controllers/termination"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Config is what every controller is built from. The controller binary
// passes the manager's client, the wall clock and the AWS provider; the
// simulator passes its in-memory API server, its virtual clock and the AWS
// provider talking to the simulated AWS.
type Config struct {
	// Kube reads (from the informer cache in the controller) and writes.
	Kube client.Client
	// Shared, when set, lists the cache's own pods, nodes and NodeClaims
	// for cluster snapshots without copying them (the controller's
	// informers; the simulator's store).
	Shared state.SharedLister
	// Cloud launches and terminates instances; it is instrumented here.
	Cloud cloudprovider.CloudProvider
	// NodeClasses resolves EC2NodeClasses (the AWS provider).
	NodeClasses nodeclass.Resolver
	Clock       clock.Clock
	// Events receives the Events the controllers publish.
	Events  events.EventRecorder
	Metrics *metrics.Metrics
	Options Options
	// Interruption, when set, runs the interruption handler on its queue.
	Interruption *Interruption
}

// Interruption is what the interruption handler needs beyond Config.
type Interruption struct {
	// SQS reads the queue named in Options.Queue.
	SQS     interruption.SQSAPI
	Options interruption.Options
	// Fresh reads the claims a notice changes uncached (the manager's
	// APIReader); Kube when nil.
	Fresh client.Reader
	// Unavailable and History are the AWS provider's ICE cache and spot
	// interruption history, which notices feed.
	Unavailable *catalog.UnavailableOfferings
	History     *catalog.InterruptionHistory
}

// Options are the controllers' settings (cmd/controller's flags).
type Options struct {
	BatchIdle           time.Duration
	BatchMax            time.Duration
	NominationTTL       time.Duration
	RegistrationTimeout time.Duration
	GCInterval          time.Duration
	GCGrace             time.Duration
	FeatureGates        map[string]bool
	// LaunchWorkers bounds how many launch results the provisioner writes
	// at once (default 64; 1 writes them in order).
	LaunchWorkers int
	// NewClaimName names a pool's next NodeClaim (default random suffixes).
	NewClaimName func(pool string) string
	// DisruptionValidationDelay is how long a disruption plan waits before
	// it is planned again and what still holds is carried out.
	DisruptionValidationDelay time.Duration
	// ConsolidationMinSavings is the least share of its nodes' price a
	// consolidation must save.
	ConsolidationMinSavings float64
	// PreferencePolicy is the solver's for provisioning and disruption
	// alike (default Respect).
	PreferencePolicy scheduling.PreferencePolicy
}

// DefaultFeatureGates are the feature switches this build understands,
// with their defaults; cmd/controller's --feature-gates overrides them and
// the simulator runs with them.
func DefaultFeatureGates() map[string]bool {
	return map[string]bool{
		"SpotToSpotConsolidation": false,
		"Disruption":              true,
		// NodeRepair replaces nodes unhealthy past their toleration
		// (pkg/disruption repair.go); alpha and off, as in Karpenter.
		"NodeRepair": false,
	}
}

// CheckFeatureGates refuses gates that do not go together: NodeRepair is a
// method of the disruption controller and needs Disruption on.
func CheckFeatureGates(g map[string]bool) error {
	if g["NodeRepair"] && !g["Disruption"] {
		return errors.New("feature gate NodeRepair=true needs Disruption=true: node repair is a method of the disruption controller")
	}
	return nil
}

// Set is every controller, declared for a driver to run.
type Set struct {
	Cluster     *state.Cluster
	Provisioner *provisioner.Provisioner
	Controllers []operator.Controller
	Singletons  []operator.Singleton
}

// New builds the controllers.
func New(cfg Config) (*Set, error) {
	if cfg.Kube == nil || cfg.Cloud == nil || cfg.Clock == nil || cfg.Events == nil || cfg.Metrics == nil {
		return nil, errors.New("controllers need a client, a cloud provider, a clock, an event recorder and metrics")
	}
	o := cfg.Options
	if err := CheckFeatureGates(o.FeatureGates); err != nil {
		return nil, err
	}
	if o.NominationTTL <= 0 {
		o.NominationTTL = provisioning.DefaultNominationTTL
	}
	clk := cfg.Clock
	kube := cfg.Kube
	// NodeOverlays reprice the instance types every controller reads
	// (pkg/cloudprovider/overlay); launches pass through.
	raw := metrics.Instrument(cfg.Cloud, cfg.Metrics)
	cloud := overlay.Wrap(raw, kube)
	m := cfg.Metrics
	rec := nsevents.NewRecorder(cfg.Events, clk, 5*time.Minute)
	cluster := state.NewCluster(kube, clk, o.NominationTTL)
	if cfg.Shared != nil {
		cluster.ListSharedFrom(cfg.Shared)
	}

	var prov *provisioner.Provisioner
	replan := func(pods []types.UID) {
		if prov != nil {
			prov.Replan(pods)
		}
	}
	timeouts := lifecycle.DefaultTimeouts()
	if o.RegistrationTimeout > 0 {
		timeouts.Registration = o.RegistrationTimeout
	}
	claims := nodeclaim.New(kube, cloud, cluster, clk, rec, m, nodeclaim.Options{Timeouts: timeouts, Replan: replan})
	prov = provisioner.New(kube, cloud, cluster, claims.Launcher(), clk, rec, m, provisioner.Options{
		BatchIdle: o.BatchIdle, BatchMax: o.BatchMax, LaunchWorkers: o.LaunchWorkers, NewName: o.NewClaimName,
		Solve: provisioning.SolveOptions(scheduling.Options{PreferencePolicy: o.PreferencePolicy}),
	})
	s := &Set{Cluster: cluster, Provisioner: prov}
	s.Controllers = append(s.Controllers,
		capacitybuffer.New(kube, cluster, clk, prov.Trigger).Controller(),
		nodeoverlay.New(kube, raw, clk).Controller(),
		provisioner.NewPodController(kube, cluster, prov).Controller(),
		claims.Controller(),
		nodepool.New(kube, cloud, clk, m).Controller(),
		staticpool.New(kube, cloud, clk, rec, m, staticpool.Options{NewName: o.NewClaimName,
			Solve: scheduling.Options{PreferencePolicy: o.PreferencePolicy}}).Controller(),
		provisioningrequest.New(kube, cluster, cloud, clk, rec, m, provisioningrequest.Options{NewName: o.NewClaimName,
			Solve: scheduling.Options{PreferencePolicy: o.PreferencePolicy}}).Controller(),
	)
	s.Controllers = append(s.Controllers, termination.New(kube, cloud, clk, rec, m).Controllers()...)
	if cfg.NodeClasses != nil {
		s.Controllers = append(s.Controllers, nodeclass.New(kube, cfg.NodeClasses, clk, rec, m).Controller())
	}
	if o.FeatureGates["Disruption"] {
		s.Controllers = append(s.Controllers, podevents.New(kube, clk).Declaration(),
			nodeclaim.NewConditions(kube, clk, cfg.NodeClasses != nil).Controller())
	}
	// The disruption executor carries out every replace-then-delete, the
	// interruption handler's marks too: with the Disruption gate off it
	// runs for those only.
	var executor *disruptor.Controller
	if o.FeatureGates["Disruption"] || cfg.Interruption != nil {
		plan := disruption.Options{
			MinSavingsShare:         o.ConsolidationMinSavings,
			SpotToSpotConsolidation: o.FeatureGates["SpotToSpotConsolidation"],
			NodeRepair:              o.FeatureGates["NodeRepair"],
			Solve:                   provisioning.SolveOptions(scheduling.Options{PreferencePolicy: o.PreferencePolicy}),
		}
		if cfg.Interruption != nil {
			plan.Rebalance = cfg.Interruption.Options.Rebalance
		}
		executor = disruptor.New(kube, cloud, cluster, clk, rec, m, disruptor.Options{
			ValidationDelay: o.DisruptionValidationDelay, Plan: plan, InterruptionsOnly: !o.FeatureGates["Disruption"],
		})
		s.Singletons = append(s.Singletons, executor)
	}
	s.Singletons = append(s.Singletons,
		prov,
		garbagecollection.New(kube, cloud, clk, rec, m, garbagecollection.Options{Interval: o.GCInterval, Grace: o.GCGrace}),
		costmetrics.New(cluster, cloud, m, costmetrics.DefaultInterval),
	)
	if executor != nil {
		// Capacity Blocks end on a date the node class's status names:
		// their nodes are marked as interrupted before EC2 reclaims them,
		// queue or not.
		deps := interruption.Deps{Kube: kube, Clock: clk, Recorder: rec, Metrics: m, Wake: executor.Wake}
		if in := cfg.Interruption; in != nil {
			deps.Fresh = in.Fresh
		}
		s.Controllers = append(s.Controllers, interruption.NewCapacityBlocks(deps).Controller())
	}
	if in := cfg.Interruption; in != nil {
		deps := interruption.Deps{Kube: kube, Fresh: in.Fresh, Clock: clk, Recorder: rec, Metrics: m,
			Unavailable: in.Unavailable, History: in.History, Wake: executor.Wake}
		queue, err := interruption.NewQueue(deps, in.SQS, in.Options)
		if err != nil {
			return nil, fmt.Errorf("setting up the interruption handler: %w", err)
		}
		s.Singletons = append(s.Singletons, queue)
		s.Controllers = append(s.Controllers, interruption.NewDisrupted(deps).Controller())
	}
	return s, nil
}

// Register adds every controller and singleton to the manager.
func (s *Set) Register(mgr ctrl.Manager, clk clock.Clock) error {
	for _, c := range s.Controllers {
		if err := operator.Register(mgr, c); err != nil {
			return err
		}
	}
	for _, sg := range s.Singletons {
		if err := operator.AddSingleton(mgr, clk, sg); err != nil {
			return err
		}
	}
	return nil
}
