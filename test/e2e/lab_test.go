package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/test/testenv"
)

const (
	labCluster = "lab"
	// exampleNodeRole is spec.role of examples/spot-fleet.yaml.
	exampleNodeRole = "NodesmithNodeRole-my-cluster"
	labRegion       = "us-east-1"
	bootDelay       = 2 * time.Second
	// labInterruptionQueue is the lab account's EventBridge target: the
	// simulated AWS puts every spot warning, rebalance recommendation and
	// instance state change on it. The interruption steps restart the
	// controller with --interruption-queue; the other steps run it without,
	// as before the queue existed (with it, the handler also re-marks claims
	// being deleted when the state changes of the instances the controller
	// itself terminates come back, which the other steps do not expect).
	// Its name is examples/terraform's default (<cluster>-nodesmith), the one
	// queue the Terraform policy lets the controller read.
	labInterruptionQueue = labCluster + "-nodesmith"
)

var lab *Lab

// Lab is the running end-to-end environment.
type Lab struct {
	Env    *testenv.Env
	World  *fakeaws.World
	AWSURL string
	Fleets *fleetLog
	Bridge *bridge
	// Faults throttles a share of EC2 calls and runs hooks around chosen
	// actions (crash_test.go).
	Faults  *awsFaults
	Catalog *catalog.Catalog

	// Perms is the IAM policy the simulated AWS enforces and its refusals.
	Perms *permissions

	ctx        context.Context
	binary     string
	kubeconfig string   // impersonates the chart's ServiceAccount
	chartArgs  []string // the chart's container args and literal env
	chartEnv   []string
	logs       []string // every controller process's log, in order
	controller *controllerProc
	// peakRSSKiB is the highest VmHWM seen over every controller process.
	peakRSSKiB int64
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runLab(m))
}

func runLab(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The lab's clients log nothing worth reading; without a logger
	// controller-runtime prints a stack trace into the test output.
	ctrllog.SetLogger(logr.Discard())
	l, err := startLab(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: lab: %v\n", err)
		if l != nil && l.Env != nil {
			_ = l.Env.Stop()
		}
		return 1
	}
	lab = l
	code := m.Run()
	if l.controller != nil {
		l.controller.stop()
	}
	cancel()
	if err := l.Env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the lab: %v\n", err)
		return 1
	}
	return code
}

func startLab(ctx context.Context) (*Lab, error) {
	l := &Lab{ctx: ctx, Fleets: &fleetLog{}, Faults: newAWSFaults(7)}
	kwok, err := kwokPath()
	if err != nil {
		return nil, err
	}
	env, err := testenv.Start(testenv.Options{FullAdmission: true})
	if err != nil {
		return nil, err
	}
	l.Env = env
	// The ReplicaSet controller's default 20 QPS would take a minute to
	// create 1,000 pods; a real cluster's control plane is not that slow.
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
	if _, err := env.StartControlPlaneComponent(ctx, "kube-scheduler", "--config="+schedCfg, "--secure-port=0", "-v="+schedulerVerbosity()); err != nil {
		return l, err
	}
	stages, err := filepath.Abs("testdata/kwok-stages.yaml")
	if err != nil {
		return l, err
	}
	if _, err := env.StartControlPlaneComponent(ctx, kwok, "--kubeconfig="+env.KubeconfigPath,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--config="+stages, "--cidr=10.64.0.0/12", "--node-ip=10.0.0.1", "--server-address="); err != nil {
		return l, err
	}

	specs, err := catalog.Specs()
	if err != nil {
		return l, err
	}
	zones := []string{labRegion + "a", labRegion + "b", labRegion + "c"}
	l.Catalog, err = catalog.Load(catalog.Options{})
	if err != nil {
		return l, err
	}
	l.World = fakeaws.NewWorld(fakeaws.Options{
		Region: labRegion, Zones: zones, Specs: fakeaws.SpecsFromCatalog(specs, labRegion, zones),
		BootDelay: bootDelay, ShutdownDelay: time.Second, ClusterName: labCluster, Seed: 7, DefaultCapacity: 1000,
		// The node role examples/spot-fleet.yaml names: the controller makes its
		// instance profile through the simulated IAM, as on a real account.
		Roles:             []string{exampleNodeRole},
		InterruptionQueue: labInterruptionQueue,
	})
	go l.World.Run(ctx, 100*time.Millisecond)
	awsSrv := fakeaws.NewServer(l.World)
	if l.Perms, err = enforcePolicy(awsSrv); err != nil {
		return l, err
	}
	srv := httptest.NewServer(l.Faults.wrap(l.Fleets.wrap(awsSrv)))
	go func() { <-ctx.Done(); srv.Close() }()
	l.AWSURL = srv.URL
	l.Bridge = newBridge(ctx, env.Client, l.Catalog)
	l.World.Subscribe(l.Bridge.observe)

	l.binary = filepath.Join(env.Dir, "nodesmith-controller")
	build := exec.Command("go", "build", "-o", l.binary, "./cmd/controller")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return l, fmt.Errorf("building cmd/controller: %v\n%s", err, out)
	}
	if err := applyFleet(ctx, env.Client); err != nil {
		return l, err
	}
	if err := addSystemNodes(ctx, env.Client, l.Catalog); err != nil {
		return l, err
	}
	chart, err := renderChart(ctx)
	if err != nil {
		return l, err
	}
	if l.kubeconfig, err = applyChartRBAC(ctx, env, chart); err != nil {
		return l, err
	}
	if l.chartArgs, l.chartEnv, err = chartCommandLine(chart); err != nil {
		return l, err
	}
	if err := l.startController(); err != nil {
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

// controllerProc is the controller binary running against the lab.
type controllerProc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startController starts the lab's controller process with the lab's
// flags; extra flags come after them, so a repeated flag overrides the
// lab's value.
func (l *Lab) startController(extra ...string) error {
	p, err := l.spawnController(extra...)
	if err != nil {
		return err
	}
	l.controller = p
	return nil
}

// spawnController starts one more controller process: the chart's command
// line, then what differs for a process on the test machine (the
// kubeconfig, the simulated AWS, no listeners, one replica, faster garbage
// collection for CI time), then extra (the last occurrence of a flag wins).
func (l *Lab) spawnController(extra ...string) (*controllerProc, error) {
	logf, err := os.CreateTemp(l.Env.Dir, "controller-*.log")
	if err != nil {
		return nil, err
	}
	args := append(append([]string(nil), l.chartArgs...),
		"--kubeconfig="+l.kubeconfig,
		"--aws-region="+labRegion,
		"--aws-endpoint="+l.AWSURL,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--gc-interval=5s", "--gc-grace=10s",
		"--registration-timeout=3m",
	)
	cmd := exec.Command(l.binary, append(args, extra...)...)
	cmd.Env = append(append(os.Environ(), l.chartEnv...), "AWS_ACCESS_KEY_ID=lab", "AWS_SECRET_ACCESS_KEY=lab", "AWS_EC2_METADATA_DISABLED=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting the controller: %w", err)
	}
	p := &controllerProc{cmd: cmd, log: logf.Name(), done: make(chan struct{})}
	l.logs = append(l.logs, logf.Name())
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	go l.watchRSS(p)
	return p, nil
}

// watchRSS samples the process's high-water mark until it exits.
func (l *Lab) watchRSS(p *controllerProc) {
	for {
		if kib := vmHWM(p.cmd.Process.Pid); kib > 0 {
			l.recordRSS(kib)
		}
		select {
		case <-p.done:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

var rssMu sync.Mutex

func (l *Lab) recordRSS(kib int64) {
	rssMu.Lock()
	defer rssMu.Unlock()
	if kib > l.peakRSSKiB {
		l.peakRSSKiB = kib
	}
}

func (l *Lab) PeakRSSMiB() float64 {
	rssMu.Lock()
	defer rssMu.Unlock()
	return float64(l.peakRSSKiB) / 1024
}

var hwmRE = regexp.MustCompile(`VmHWM:\s+(\d+) kB`)

func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	m := hwmRE.FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// kill ends the controller at once (SIGKILL), as a crashed pod would.
func (p *controllerProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends the controller gracefully.
func (p *controllerProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.kill()
	}
}

func (p *controllerProc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fleetLog records every CreateFleet request as it crosses the wire.
type fleetLog struct {
	mu       sync.Mutex
	requests []fleetRequest
}

type fleetRequest struct {
	At           time.Time
	CapacityType string
	Overrides    int
	Total        int
	// Families are the distinct instance families among the overrides.
	Families map[string]bool
}

var overrideRE = regexp.MustCompile(`^LaunchTemplateConfigs\.\d+\.Overrides\.\d+\.InstanceType$`)

func (f *fleetLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") == "CreateFleet" {
			req := fleetRequest{At: time.Now(), CapacityType: form.Get("TargetCapacitySpecification.DefaultTargetCapacityType"), Families: map[string]bool{}}
			req.Total, _ = strconv.Atoi(form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
			for k := range form {
				if overrideRE.MatchString(k) {
					req.Overrides++
					family, _, _ := strings.Cut(form.Get(k), ".")
					req.Families[family] = true
				}
			}
			f.mu.Lock()
			f.requests = append(f.requests, req)
			f.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (f *fleetLog) since(t time.Time) []fleetRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fleetRequest
	for _, r := range f.requests {
		if !r.At.Before(t) {
			out = append(out, r)
		}
	}
	return out
}

// schedulerVerbosity is kube-scheduler's log level: NODESMITH_LAB_SCHEDULER_V
// raises it to read its queue's decisions (its log stays in the lab's dir).
func schedulerVerbosity() string {
	if v := os.Getenv("NODESMITH_LAB_SCHEDULER_V"); v != "" {
		return v
	}
	return "1"
}
