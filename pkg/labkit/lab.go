package labkit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// kwokStages are the lab's KWOK stages: Ready nodes with heartbeats, bound
// pods Running, deleted pods finalized.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// Options shape a lab. Cluster, Region and NodeRole are required.
type Options struct {
	// Cluster names the cluster: the discovery tag of the simulated
	// subnets and security groups, the chart's clusterName and the
	// Terraform policy's cluster_name.
	Cluster string
	Region  string
	// NodeRole is the IAM role that exists from the start for the
	// EC2NodeClass's spec.role (examples/spot-fleet.yaml names
	// NodesmithNodeRole-my-cluster).
	NodeRole string
	// BootDelay is how long a simulated instance takes to be running.
	BootDelay time.Duration
	// Seed and DefaultCapacity (instances of each type in each zone) shape
	// the simulated AWS.
	Seed            int64
	DefaultCapacity int
	// ExtraRoles are more IAM roles the account has from the start (a
	// cluster that ran Karpenter has KarpenterNodeRole-<cluster>).
	ExtraRoles []string
	// KarpenterTags also tags the cluster's subnets and security groups
	// karpenter.sh/discovery=<Cluster>, as on a cluster that ran Karpenter,
	// so converted EC2NodeClasses find them.
	KarpenterTags bool
	// InterruptionQueue, when set, is the SQS queue the simulated
	// EventBridge puts interruption events on.
	InterruptionQueue string
	// EnforcePolicy has the simulated AWS authorize every request against
	// examples/terraform's controller policy (see Permissions).
	EnforcePolicy bool
	// ChartValues are Helm values (YAML) besides clusterName.
	ChartValues string
	// WrapAWS, when set, wraps the simulated AWS's HTTP handler (a test's
	// request log or fault injector).
	WrapAWS func(http.Handler) http.Handler
	// ControllerFlags come after the lab's own flags on every controller
	// process's command line.
	ControllerFlags []string
	// ControllerBinary is a built cmd/controller; empty builds one from the
	// checkout with `go build`.
	ControllerBinary string
	// BridgeLog receives the bridge's errors; nil is the standard logger.
	BridgeLog func(format string, args ...any)
}

// Lab is a running test bed.
type Lab struct {
	Opts    Options
	Env     *testenv.Env
	World   *fakeaws.World
	AWSURL  string
	Catalog *catalog.Catalog
	Bridge  *Bridge
	// Perms is nil unless Options.EnforcePolicy.
	Perms *Permissions

	ctx    context.Context
	cancel context.CancelFunc
	// binary is cmd/controller; kubeconfig impersonates the chart's
	// ServiceAccount; chartArgs and chartEnv are the chart's container
	// args and literal env.
	binary     string
	kubeconfig string
	chartArgs  []string
	chartEnv   []string

	mu          sync.Mutex
	controllers []*Controller
	peakRSSKiB  int64
}

// Start brings the lab up to the point where a controller can run: control
// plane, KWOK, simulated AWS, bridge, system nodes, the chart's RBAC and
// command line, the controller binary. On failure it stops what it started.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	if opts.Cluster == "" || opts.Region == "" || opts.NodeRole == "" {
		return nil, errors.New("labkit: Options.Cluster, Region and NodeRole are required")
	}
	kwok, err := testenv.KwokPath()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Lab{Opts: opts, ctx: ctx, cancel: cancel}
	if err := l.start(kwok); err != nil {
		_ = l.Stop()
		return nil, err
	}
	return l, nil
}

func (l *Lab) start(kwok string) error {
	env, err := testenv.Start(testenv.Options{FullAdmission: true})
	if err != nil {
		return err
	}
	l.Env = env
	if err := l.startControlPlane(kwok); err != nil {
		return err
	}
	if err := l.startAWS(); err != nil {
		return err
	}
	if l.binary = l.Opts.ControllerBinary; l.binary == "" {
		l.binary = filepath.Join(env.Dir, "nodesmith-controller")
		build := exec.Command("go", "build", "-o", l.binary, "./cmd/controller")
		build.Dir = testenv.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building cmd/controller: %v\n%s", err, out)
		}
	}
	if err := addSystemNodes(l.ctx, env.Client, l.Catalog, l.Opts.Region); err != nil {
		return err
	}
	chart, err := testenv.RenderChart(l.ctx, ChartNamespace, "clusterName: "+l.Opts.Cluster+"\n"+l.Opts.ChartValues)
	if err != nil {
		return err
	}
	if l.kubeconfig, err = ApplyChartRBAC(l.ctx, env, chart); err != nil {
		return err
	}
	l.chartArgs, l.chartEnv, err = ChartCommandLine(chart)
	return err
}

// startControlPlane adds kube-controller-manager, kube-scheduler and KWOK
// to the API server. The ReplicaSet controller's and the scheduler's
// default 20 QPS would take a minute to create and bind 1,000 pods; a real
// cluster's control plane is not that slow.
func (l *Lab) startControlPlane(kwok string) error {
	env := l.Env
	if _, err := env.StartControllerManager(l.ctx, "--kube-api-qps=300", "--kube-api-burst=600"); err != nil {
		return err
	}
	schedCfg := filepath.Join(env.Dir, "scheduler.yaml")
	if err := os.WriteFile(schedCfg, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 300
  burst: 600
leaderElection:
  leaderElect: false
`, env.KubeconfigPath)), 0o600); err != nil {
		return err
	}
	if _, err := env.StartControlPlaneComponent(l.ctx, "kube-scheduler", "--config="+schedCfg, "--secure-port=0", "-v="+schedulerVerbosity()); err != nil {
		return err
	}
	stages := filepath.Join(env.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o600); err != nil {
		return err
	}
	_, err := env.StartControlPlaneComponent(l.ctx, kwok, "--kubeconfig="+env.KubeconfigPath,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector="+KwokAnnotation+"=fake",
		"--config="+stages, "--cidr=10.64.0.0/12", "--node-ip=10.0.0.1", "--server-address=")
	return err
}

// startAWS starts the simulated AWS on loopback with the bridge subscribed.
func (l *Lab) startAWS() error {
	specs, err := catalog.Specs()
	if err != nil {
		return err
	}
	if l.Catalog, err = catalog.Load(catalog.Options{}); err != nil {
		return err
	}
	region := l.Opts.Region
	zones := []string{region + "a", region + "b", region + "c"}
	l.World = fakeaws.NewWorld(fakeaws.Options{
		Region: region, Zones: zones, Specs: fakeaws.SpecsFromCatalog(specs, region, zones),
		BootDelay: l.Opts.BootDelay, ShutdownDelay: time.Second, ClusterName: l.Opts.Cluster,
		Seed: l.Opts.Seed, DefaultCapacity: l.Opts.DefaultCapacity,
		// The controller makes the node role's instance profile through the
		// simulated IAM, as on a real account.
		Roles:             append([]string{l.Opts.NodeRole}, l.Opts.ExtraRoles...),
		InterruptionQueue: l.Opts.InterruptionQueue,
	})
	if l.Opts.KarpenterTags {
		if err := tagForKarpenter(l.World, l.Opts.Cluster); err != nil {
			return err
		}
	}
	go l.World.Run(l.ctx, 100*time.Millisecond)
	awsSrv := fakeaws.NewServer(l.World)
	if l.Opts.EnforcePolicy {
		if l.Perms, err = enforcePolicy(awsSrv, l.Opts); err != nil {
			return err
		}
	}
	var h http.Handler = awsSrv
	if l.Opts.WrapAWS != nil {
		h = l.Opts.WrapAWS(h)
	}
	srv := httptest.NewServer(h)
	go func() { <-l.ctx.Done(); srv.Close() }()
	l.AWSURL = srv.URL
	l.Bridge = NewBridge(l.ctx, l.Env.Client, l.Catalog, region, l.Opts.BridgeLog)
	l.World.Subscribe(l.Bridge.Observe)
	return nil
}

// KarpenterDiscoveryTag is the tag Karpenter's getting-started guide puts on
// a cluster's subnets and security groups.
const KarpenterDiscoveryTag = "karpenter.sh/discovery"

// tagForKarpenter adds karpenter.sh/discovery=<cluster> to every subnet and
// security group that carries Nodesmith's discovery tag.
func tagForKarpenter(w *fakeaws.World, cluster string) error {
	var ids []string
	for _, s := range w.Subnets() {
		if s.Tags[awsv1.TagDiscovery] == cluster {
			ids = append(ids, s.ID)
		}
	}
	for _, g := range w.SecurityGroups() {
		if g.Tags[awsv1.TagDiscovery] == cluster {
			ids = append(ids, g.ID)
		}
	}
	if len(ids) == 0 {
		return fmt.Errorf("no subnet or security group tagged %s=%s to tag for Karpenter", awsv1.TagDiscovery, cluster)
	}
	return w.CreateTags(ids, map[string]string{KarpenterDiscoveryTag: cluster})
}

// Context is done once Stop runs.
func (l *Lab) Context() context.Context { return l.ctx }

// Stop ends every controller process, the simulated AWS, the bridge, KWOK,
// the control plane, and removes the scratch folder.
func (l *Lab) Stop() error {
	l.mu.Lock()
	procs := l.controllers
	l.controllers = nil
	l.mu.Unlock()
	for _, p := range procs {
		p.Stop()
	}
	l.cancel()
	if l.Env == nil {
		return nil
	}
	return l.Env.Stop()
}

// schedulerVerbosity is kube-scheduler's log level: NODESMITH_LAB_SCHEDULER_V
// raises it to read its queue's decisions (its log stays in the lab's dir).
func schedulerVerbosity() string {
	if v := os.Getenv("NODESMITH_LAB_SCHEDULER_V"); v != "" {
		return v
	}
	return "1"
}
