// Command controller is Nodesmith's controller: a controller-runtime manager
// running the provisioning, NodeClaim lifecycle, termination, garbage
// collection, emptiness, NodePool and EC2NodeClass controllers, and with
// --interruption-queue the interruption handler, against AWS (or a
// simulated AWS through --aws-endpoint).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"

	// CA roots compiled in: the image is FROM scratch and has no bundle.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/controllers"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/interruption"
	"github.com/nodesmith/nodesmith/pkg/controllers/karpenter"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	interruptionpolicy "github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	awsprovider "github.com/nodesmith/nodesmith/pkg/providers/aws"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
	"github.com/nodesmith/nodesmith/pkg/version"
)

func main() {
	opts, err := parse(flag.CommandLine, os.Args[1:], getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(2)
	}
	if opts.Version {
		fmt.Println(versionLine())
		return
	}
	ctrl.SetLogger(ctrlzap.New(ctrlzap.Level(level(opts.LogLevel)), ctrlzap.JSONEncoder()))
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		ctrl.Log.Error(err, "controller stopped")
		os.Exit(1)
	}
}

// versionLine is what --version prints.
func versionLine() string { return "nodesmith-controller " + version.Get().String() }

func level(s string) zapcore.Level {
	switch s {
	case "debug":
		return zapcore.DebugLevel
	case "error":
		return zapcore.ErrorLevel
	}
	return zapcore.InfoLevel
}

func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nsv1.AddToScheme, awsv1.AddToScheme, cbv1.AddToScheme, prv1.AddToScheme, nsv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func run(ctx context.Context, o *Options) error {
	logger := ctrl.Log.WithName("setup")
	s, err := scheme()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster: %w", err)
	}
	// Thousand-pod scale-ups write many objects at once (defaults 200 and 400).
	cfg.QPS, cfg.Burst = float32(o.KubeClientQPS), o.KubeClientBurst
	var leader *leaderLease
	if o.LeaderElect {
		if leader, err = newLeaderLease(cfg, o.LeaderElectionNS); err != nil {
			return err
		}
	}
	// Set at SIGTERM: from then on the manager's end of leader election is
	// the graceful stop it is, logged at info (stopAware).
	var stopping atomic.Bool
	go func() { <-ctx.Done(); stopping.Store(true) }()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  s,
		Logger:                  stopAware(ctrl.Log, &stopping),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr, ExtraHandlers: profilingHandlers(o.EnableProfiling)},
		HealthProbeBindAddress:  o.HealthAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        leaseName,
		LeaderElectionNamespace: o.LeaderElectionNS,
		// Built here so a graceful stop can hand the Lease back (leader.release).
		LeaderElectionResourceLockInterface: leader.resourceLock(),
		// managedFields are a third or more of a pod's size and no
		// controller reads them; pods keep only what is read (state.TrimPod):
		// at 100,000 pods that is hundreds of MiB.
		Cache: state.CacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	if err := state.IndexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	clk := clock.RealClock{}
	m, err := metrics.New(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	rec := events.NewRecorder(mgr.GetEventRecorder("nodesmith"), clk, 5*time.Minute)
	provider, awsCfg, err := newAWS(ctx, o, cfg, mgr.GetClient(), clk, rec, m)
	if err != nil {
		return err
	}
	set, err := controllers.New(controllers.Config{
		Kube: mgr.GetClient(), Shared: state.InformerLister{Cache: mgr.GetCache()}, Cloud: provider, NodeClasses: provider, Clock: clk,
		Events: mgr.GetEventRecorder("nodesmith"), Metrics: m,
		Options: controllers.Options{
			BatchIdle: o.BatchIdle, BatchMax: o.BatchMax, NominationTTL: o.NominationTTL,
			RegistrationTimeout: o.RegistrationTimeout, GCInterval: o.GCInterval, GCGrace: o.GCGrace,
			FeatureGates:              o.FeatureGates,
			DisruptionValidationDelay: o.DisruptionValidationDelay,
			ConsolidationMinSavings:   o.ConsolidationMinSavings,
			PreferencePolicy:          scheduling.PreferencePolicy(o.PreferencePolicy),
		},
		Interruption: interruptionConfig(o, awsCfg, mgr.GetAPIReader(), provider),
	})
	if err != nil {
		return err
	}
	if err := set.Register(mgr, clk); err != nil {
		return fmt.Errorf("registering the controllers: %w", err)
	}
	if err := addCatalogSingletons(mgr, o, provider, mgr.GetClient(), clk, rec); err != nil {
		return err
	}
	if err := addCoexistenceCheck(mgr, clk, rec, ctrl.Log, o.KarpenterCheckInterval); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	ready := &readiness{}
	if err := mgr.Add(&readinessProbe{r: ready, cache: mgr.GetCache(), ping: provider.Ping, clk: clk, delay: time.Second, maxDelay: 30 * time.Second}); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", ready.Check); err != nil {
		return err
	}
	if o.InterruptionQueue != "" {
		logger.Info("interruption handling on", "queue", o.InterruptionQueue, "rebalanceMode", o.RebalanceMode, "workers", o.InterruptionWorkers)
	}
	v := version.Get()
	logger.Info("starting", "version", v.Version, "commit", v.Commit, "cluster", o.ClusterName, "region", o.AWSRegion, "endpoint", o.AWSEndpoint,
		"batchIdle", o.BatchIdle.String(), "batchMax", o.BatchMax.String(), "leaderElect", o.LeaderElect, "featureGates", o.FeatureGates)
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	// Stopped on purpose (SIGTERM), every controller returned: hand over.
	if leader != nil {
		leader.release()
	}
	return nil
}

// interruptionConfig is the interruption handler's setup, nil without --interruption-queue.
func interruptionConfig(o *Options, awsCfg aws.Config, fresh client.Reader, provider *awsprovider.Provider) *controllers.Interruption {
	if o.InterruptionQueue == "" {
		return nil
	}
	opts := interruption.DefaultOptions(o.InterruptionQueue)
	opts.Workers = o.InterruptionWorkers
	opts.Rebalance = interruptionpolicy.RebalanceMode(o.RebalanceMode)
	if o.PodName != "" {
		opts.Self = &types.NamespacedName{Namespace: o.LeaderElectionNS, Name: o.PodName}
	}
	return &controllers.Interruption{
		SQS: sqs.NewFromConfig(awsCfg), Options: opts, Fresh: fresh,
		Unavailable: provider.Unavailable(), History: provider.Interruptions(),
	}
}

// profilingHandlers are Go's pprof endpoints for the metrics server, when on.
func profilingHandlers(on bool) map[string]http.Handler {
	if !on {
		return nil
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// addCoexistenceCheck warns, at start and every few minutes, while
// Karpenter's NodePools in the cluster may still launch nodes. It reads
// through the API reader: Karpenter's CRDs may not exist.
func addCoexistenceCheck(mgr ctrl.Manager, clk clock.Clock, rec *events.Recorder, logger logr.Logger, every time.Duration) error {
	gauge, err := karpenter.NewGauge(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("registering the Karpenter coexistence metric: %w", err)
	}
	return operator.AddSingleton(mgr, clk, karpenter.New(mgr.GetAPIReader(), rec, gauge, logger.WithName("karpenter"), every))
}
