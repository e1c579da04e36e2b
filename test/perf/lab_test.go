package perf

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/simulator"
	"github.com/nodesmith/nodesmith/test/testenv"
)

const (
	cluster  = "perf"
	region   = "us-east-1"
	nodeRole = "NodesmithNodeRole-my-cluster" // spec.role of examples/spot-fleet.yaml
	ns       = "perf"
	// bootDelay is how long a simulated instance takes from CreateFleet to
	// running (its Node is registered then). Karpenter's suite runs on
	// KWOK nodes that exist as soon as they are created; EC2 takes tens of
	// seconds. The table states it next to every figure.
	bootDelay = 2 * time.Second
	// chartNamespace and chartSA: the controller runs with the chart's RBAC.
	chartNamespace = "nodesmith"
	chartSA        = "system:serviceaccount:nodesmith:nodesmith"
)

// lab is the running environment every scenario shares; each scenario
// creates its own NodePool and workloads and removes them when it ends.
var lab *perfLab

type perfLab struct {
	env     *testenv.Env
	world   *fakeaws.World
	awsURL  string
	catalog *catalog.Catalog
	// binary is cmd/controller built for this run; kubeconfig impersonates
	// the chart's ServiceAccount; args and environ are the chart's command
	// line.
	binary     string
	kubeconfig string
	args       []string
	environ    []string
	controller *controllerProc
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrllog.SetLogger(logr.Discard())
	start := time.Now()
	l, err := startLab(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: perf lab: %v\n", err)
		if l != nil && l.env != nil {
			_ = l.env.Stop()
		}
		return 1
	}
	lab = l
	fmt.Fprintf(os.Stderr, "perf lab up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	printTable(os.Stdout)
	if l.controller != nil {
		l.controller.stop()
	}
	cancel()
	if err := l.env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the perf lab: %v\n", err)
		return 1
	}
	return code
}

func startLab(ctx context.Context) (*perfLab, error) {
	l := &perfLab{}
	kwok, err := kwokPath()
	if err != nil {
		return nil, err
	}
	env, err := testenv.Start(testenv.Options{FullAdmission: true})
	if err != nil {
		return nil, err
	}
	l.env = env
	// The ReplicaSet controller's and the scheduler's default 20 QPS would
	// take a minute to create and bind 1,000 pods.
	if _, err := env.StartControllerManager(ctx, "--kube-api-qps=300", "--kube-api-burst=600"); err != nil {
		return l, err
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
		return l, err
	}
	if _, err := env.StartControlPlaneComponent(ctx, "kube-scheduler", "--config="+schedCfg, "--secure-port=0", "-v=1"); err != nil {
		return l, err
	}
	// The lab's KWOK stages (test/e2e's): Ready nodes with heartbeats,
	// bound pods Running, deleted pods finalized.
	stages := filepath.Join(testenv.RepoRoot(), "test", "e2e", "testdata", "kwok-stages.yaml")
	if _, err := env.StartControlPlaneComponent(ctx, kwok, "--kubeconfig="+env.KubeconfigPath,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--config="+stages, "--cidr=10.64.0.0/12", "--node-ip=10.0.0.1", "--server-address="); err != nil {
		return l, err
	}

	specs, err := catalog.Specs()
	if err != nil {
		return l, err
	}
	if l.catalog, err = catalog.Load(catalog.Options{}); err != nil {
		return l, err
	}
	zones := []string{region + "a", region + "b", region + "c"}
	l.world = fakeaws.NewWorld(fakeaws.Options{
		Region: region, Zones: zones, Specs: fakeaws.SpecsFromCatalog(specs, region, zones),
		BootDelay: bootDelay, ShutdownDelay: time.Second, ClusterName: cluster, Seed: 24,
		// Karpenter's KWOK provider has no capacity limits; 5,000 of each
		// type in each zone is more than any scenario launches.
		DefaultCapacity: 5000,
		Roles:           []string{nodeRole},
	})
	go l.world.Run(ctx, 100*time.Millisecond)
	srv := httptest.NewServer(fakeaws.NewServer(l.world))
	go func() { <-ctx.Done(); srv.Close() }()
	l.awsURL = srv.URL
	br := &bridge{kube: env.Client, catalog: l.catalog, work: make(chan fakeaws.Event, 20000)}
	for range 8 {
		go br.run(ctx)
	}
	l.world.Subscribe(br.observe)

	l.binary = filepath.Join(env.Dir, "nodesmith-controller")
	build := exec.Command("go", "build", "-o", l.binary, "./cmd/controller")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return l, fmt.Errorf("building cmd/controller: %v\n%s", err, out)
	}
	if err := applyBase(ctx, env.Client, l.catalog); err != nil {
		return l, err
	}
	chart, err := testenv.RenderChart(ctx, chartNamespace, "clusterName: "+cluster+"\n")
	if err != nil {
		return l, err
	}
	if l.kubeconfig, err = applyChartRBAC(ctx, env, chart); err != nil {
		return l, err
	}
	if l.args, l.environ, err = chartCommandLine(chart); err != nil {
		return l, err
	}
	return l, nil
}

func kwokPath() (string, error) {
	if p := os.Getenv("NODESMITH_KWOK"); p != "" {
		return p, nil
	}
	cache, err := testenv.CacheDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(cache, "kwok-v0.8.0", "kwok")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("kwok not found at %s (run make tools, or tools/build.sh kwok): %w", p, err)
	}
	return p, nil
}

// applyBase creates what every scenario shares: the EC2NodeClass of
// examples/spot-fleet.yaml pointed at the lab's subnets, the workload
// namespace, and two tainted system nodes (a real cluster's managed node
// group; without any node kube-scheduler backs pods off for up to 10 s).
func applyBase(ctx context.Context, kube client.Client, cat *catalog.Catalog) error {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "spot-fleet.yaml"))
	if err != nil {
		return err
	}
	var class *awsv1.EC2NodeClass
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		if bytes.Contains(doc, []byte("\nkind: EC2NodeClass")) {
			class = &awsv1.EC2NodeClass{}
			if err := yaml.UnmarshalStrict(doc, class); err != nil {
				return fmt.Errorf("reading the example EC2NodeClass: %w", err)
			}
		}
	}
	if class == nil {
		return errors.New("examples/spot-fleet.yaml has no EC2NodeClass")
	}
	class.Name = nodeClassName
	retag := func(tags map[string]string) {
		if _, ok := tags[awsv1.TagDiscovery]; ok {
			tags[awsv1.TagDiscovery] = cluster
		}
	}
	for _, term := range class.Spec.SubnetSelectorTerms {
		retag(term.Tags)
	}
	for _, term := range class.Spec.SecurityGroupSelectorTerms {
		retag(term.Tags)
	}
	if err := kube.Create(ctx, class); err != nil {
		return fmt.Errorf("creating the EC2NodeClass: %w", err)
	}
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	it, ok := cat.Get("m6i.large")
	if !ok {
		return errors.New("m6i.large is not in the catalog")
	}
	for _, zone := range []string{region + "a", region + "b"} {
		name := "system-" + zone[len(zone)-1:]
		labels := it.LabelsFor(catalog.Offering{Zone: zone, CapacityType: "on-demand"})
		labels[corev1.LabelHostname] = name
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status:     corev1.NodeStatus{Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable()},
		}
		if err := kube.Create(ctx, n); err != nil {
			return fmt.Errorf("creating system node %s: %w", name, err)
		}
	}
	return nil
}

// chartCommandLine is the controller container's args (with $(VAR)
// expanded from its literal env) and that env, from the rendered chart.
func chartCommandLine(objs []*unstructured.Unstructured) ([]string, []string, error) {
	var dep *appsv1.Deployment
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			dep = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
				return nil, nil, fmt.Errorf("reading the chart's Deployment: %w", err)
			}
		}
	}
	if dep == nil || len(dep.Spec.Template.Spec.Containers) == 0 {
		return nil, nil, errors.New("the chart rendered no Deployment with a container")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	vars := map[string]string{}
	var env []string
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			continue
		}
		vars[e.Name] = e.Value
		env = append(env, e.Name+"="+e.Value)
	}
	var args []string
	for _, a := range c.Args {
		args = append(args, os.Expand(strings.ReplaceAll(strings.ReplaceAll(a, "$(", "${"), ")", "}"), func(k string) string { return vars[k] }))
	}
	return args, env, nil
}

// applyChartRBAC creates the chart's ServiceAccount, roles and bindings and
// returns a kubeconfig that impersonates the ServiceAccount.
func applyChartRBAC(ctx context.Context, env *testenv.Env, objs []*unstructured.Unstructured) (string, error) {
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}); err != nil {
		return "", err
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := env.Client.Create(ctx, u); err != nil {
				return "", fmt.Errorf("applying the chart's %s %s: %w", u.GetKind(), u.GetName(), err)
			}
		}
	}
	cfg, err := clientcmd.LoadFromFile(env.KubeconfigPath)
	if err != nil {
		return "", err
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = chartSA
	}
	path := filepath.Join(env.Dir, "kubeconfig-nodesmith")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// bridge registers a simulated instance's Node when it is running (as
// kubelet registration would; simulator.NodeFor builds it, the same Node
// the simulator and test/e2e's lab register) and deletes it when the
// instance terminates.
type bridge struct {
	kube    client.Client
	catalog *catalog.Catalog
	work    chan fakeaws.Event
}

// observe is the World subscriber; it must not block the world.
func (b *bridge) observe(e fakeaws.Event) {
	if e.Kind == fakeaws.EventRunning || e.Kind == fakeaws.EventTerminated {
		b.work <- e
	}
}

func (b *bridge) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-b.work:
			var err error
			if e.Kind == fakeaws.EventRunning {
				var node *corev1.Node
				if node, err = simulator.NodeFor(e.Instance, b.catalog, region); err == nil {
					node.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
					err = client.IgnoreAlreadyExists(b.kube.Create(ctx, node))
				}
			} else {
				err = client.IgnoreNotFound(b.kube.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(e.Instance.ID)}}))
			}
			if err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
				log.Printf("bridge: %s %s: %v", e.Kind, e.Instance.ID, err)
			}
		}
	}
}

// controllerProc is the controller binary running against the lab.
type controllerProc struct {
	cmd     *exec.Cmd
	log     string
	metrics string // its Prometheus endpoint
	done    chan struct{}
}

// restartController stops the running controller, if any, and starts a
// fresh one, so a scenario's memory figures are its own.
func (l *perfLab) restartController() error {
	if l.controller != nil {
		l.controller.stop()
	}
	logf, err := os.CreateTemp(l.env.Dir, "controller-*.log")
	if err != nil {
		return err
	}
	// Its metrics (the Go runtime's heap among them) on a free loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	args := append(append([]string(nil), l.args...),
		"--kubeconfig="+l.kubeconfig,
		"--aws-region="+region,
		"--aws-endpoint="+l.awsURL,
		"--leader-elect=false",
		"--metrics-bind-address="+metricsAddr,
		"--health-probe-bind-address=0",
	)
	cmd := exec.Command(l.binary, args...)
	cmd.Env = append(append(os.Environ(), l.environ...), "AWS_ACCESS_KEY_ID=lab", "AWS_SECRET_ACCESS_KEY=lab", "AWS_EC2_METADATA_DISABLED=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting the controller: %w", err)
	}
	p := &controllerProc{cmd: cmd, log: logf.Name(), metrics: "http://" + metricsAddr + "/metrics", done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	l.controller = p
	return nil
}

func (p *controllerProc) pid() int { return p.cmd.Process.Pid }

func (p *controllerProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *controllerProc) tail(n int) string {
	if p == nil {
		return "(no controller running)"
	}
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
