// Command controller is Nodesmith's controller: a controller-runtime manager
// running the provisioning, NodeClaim lifecycle, termination, garbage
// collection, emptiness, NodePool and EC2NodeClass controllers against AWS
// (or a simulated AWS through --aws-endpoint).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	// CA roots compiled in: the image is scratch, with no /etc/ssl.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/emptiness"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/garbagecollection"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclaim"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclass"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodepool"
	"github.com/nodesmith/nodesmith/pkg/controllers/provisioner"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/controllers/termination"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

func main() {
	opts, err := parse(flag.CommandLine, os.Args[1:], getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(2)
	}
	ctrl.SetLogger(ctrlzap.New(ctrlzap.Level(level(opts.LogLevel)), ctrlzap.JSONEncoder()))
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		ctrl.Log.Error(err, "controller stopped")
		os.Exit(1)
	}
}

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
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nsv1.AddToScheme, awsv1.AddToScheme} {
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
	cfg.QPS, cfg.Burst = 200, 400 // thousand-pod scale-ups write many objects at once
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  s,
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.HealthAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "nodesmith-controller",
		LeaderElectionNamespace: o.LeaderElectionNS,
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
	provider, err := newAWS(ctx, o, cfg, mgr.GetClient(), clk, rec)
	if err != nil {
		return err
	}
	cloud := metrics.Instrument(provider, m)
	cluster := state.NewCluster(mgr.GetClient(), clk, o.NominationTTL)
	kube := mgr.GetClient()

	var prov *provisioner.Provisioner
	replan := func(pods []types.UID) {
		if prov != nil {
			prov.Replan(pods)
		}
	}
	timeouts := lifecycle.DefaultTimeouts()
	timeouts.Registration = o.RegistrationTimeout
	claims := nodeclaim.New(kube, cloud, cluster, clk, rec, m, nodeclaim.Options{Timeouts: timeouts, Replan: replan})
	prov = provisioner.New(kube, cloud, cluster, claims.Launcher(), clk, rec, m,
		provisioner.Options{BatchIdle: o.BatchIdle, BatchMax: o.BatchMax})

	setups := []interface{ SetupWithManager(ctrl.Manager) error }{
		provisioner.NewPodController(kube, cluster, prov),
		claims,
		termination.New(kube, cloud, clk, rec, m),
		nodepool.New(kube, cloud, clk, m),
		nodeclass.New(kube, provider, clk, rec),
	}
	if o.FeatureGates["Emptiness"] {
		setups = append(setups, emptiness.New(kube, cluster, clk, rec, m))
	}
	for _, c := range setups {
		if err := c.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up %T: %w", c, err)
		}
	}
	for _, r := range []interface {
		Start(context.Context) error
		NeedLeaderElection() bool
	}{
		prov,
		garbagecollection.New(kube, cloud, clk, rec, m, garbagecollection.Options{Interval: o.GCInterval, Grace: o.GCGrace}),
	} {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("adding %T: %w", r, err)
		}
	}
	if err := addCatalogSingletons(mgr, o, provider, kube, clk, rec); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if o.InterruptionQueue != "" {
		logger.Info("interruption queue configured; spot interruption handling is not part of this build yet", "queue", o.InterruptionQueue)
	}
	logger.Info("starting", "cluster", o.ClusterName, "region", o.AWSRegion, "endpoint", o.AWSEndpoint,
		"batchIdle", o.BatchIdle.String(), "batchMax", o.BatchMax.String(), "leaderElect", o.LeaderElect, "featureGates", o.FeatureGates)
	return mgr.Start(ctx)
}
