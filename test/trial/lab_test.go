package trial

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/labkit"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// trialLab is one `nodesmith lab up` in a test's temporary folder.
type trialLab struct {
	bin   string // the nodesmith binary
	dir   string // --dir
	state labkit.State
	kube  client.Client
}

// buildNodesmith builds cmd/nodesmith into a temporary folder.
func buildNodesmith(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodesmith")
	build := exec.Command("go", "build", "-o", bin, "./cmd/nodesmith")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/nodesmith: %v\n%s", err, out)
	}
	return bin
}

// nodesmith runs the binary from the checkout's root with env added and
// returns its stdout and stderr together; it fails t on a non-zero exit.
func (l *trialLab) nodesmith(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(l.bin, args...)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(l.dir, labkit.KubeconfigFile))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nodesmith %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kubectl runs kubectl against the lab, as docs/try-it.md does.
func (l *trialLab) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := l.kubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (l *trialLab) kubectlErr(args ...string) (string, error) {
	cmd := exec.Command("kubectl", args...)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+l.state.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// nodesmithStdout is nodesmith's stdout alone (convert's YAML).
func (l *trialLab) nodesmithStdout(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(l.bin, args...)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(l.dir, labkit.KubeconfigFile))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nodesmith %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// controllerLog is the lab's controller log so far.
func (l *trialLab) controllerLog(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(l.state.ControllerLog)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// labUp runs `nodesmith lab up` and reads the lab's state; the lab is
// brought down when the test ends, whatever happened.
func labUp(t *testing.T) (*trialLab, string) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is not on PATH: docs/try-it.md drives the lab with it: %v", err)
	}
	l := &trialLab{bin: buildNodesmith(t), dir: filepath.Join(t.TempDir(), "lab")}
	t.Cleanup(func() {
		if _, alive, _ := labkit.ReadPID(l.dir); alive {
			out, err := exec.Command(l.bin, "lab", "down", "--dir", l.dir).CombinedOutput()
			if err != nil {
				t.Errorf("lab down at cleanup: %v\n%s", err, out)
			}
		}
	})
	out := l.nodesmith(t, "lab", "up", "--dir", l.dir, "--boot-delay", "2s")
	st, err := labkit.ReadState(l.dir)
	if err != nil {
		t.Fatalf("lab up printed:\n%s\nbut its state cannot be read: %v", out, err)
	}
	l.state = st
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := testenv.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	if l.kube, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	return l, out
}

func (l *trialLab) waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := labkit.Poll(timeout, time.Second, cond); err != nil {
		t.Fatalf("%s after %s: %v\ncontroller log tail:\n%s", what, timeout, err, labkit.TailFile(l.state.ControllerLog, 30))
	}
}

// readyNodes are the Ready nodes of a NodePool.
func (l *trialLab) readyNodes(pool string) ([]string, error) {
	var nodes corev1.NodeList
	if err := l.kube.List(context.Background(), &nodes, client.MatchingLabels{nsv1.LabelNodePool: pool}); err != nil {
		return nil, err
	}
	var ready []string
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, n.Name)
			}
		}
	}
	return ready, nil
}

// runWeb runs docs/try-it.md's Deployment (pause pods of 500m CPU and
// 256Mi) at replicas, waits until every pod runs and returns the Ready
// nodes of pool, failing t when there is none.
func (l *trialLab) runWeb(t *testing.T, replicas int, pool string) []string {
	t.Helper()
	l.kubectl(t, "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "--replicas=0")
	l.kubectl(t, "set", "resources", "deployment", "web", "--requests=cpu=500m,memory=256Mi")
	l.kubectl(t, "scale", "deployment", "web", fmt.Sprintf("--replicas=%d", replicas))
	l.waitFor(t, 5*time.Minute, fmt.Sprintf("%d web pods running", replicas), func() error {
		c, err := labkit.CountPods(context.Background(), l.kube, "default", map[string]string{"app": "web"})
		if err != nil {
			return err
		}
		return c.AllRunning(replicas)
	})
	ready, err := l.readyNodes(pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(ready) == 0 {
		t.Fatalf("the web pods run, but no Ready node of NodePool %s exists", pool)
	}
	return ready
}

// sessionCommands names the live processes of the lab's session.
func sessionCommands(t *testing.T, sid int) []string {
	t.Helper()
	pids, err := labkit.SessionProcesses(sid)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if err == nil {
			names = append(names, strings.TrimSpace(string(b)))
		}
	}
	slices.Sort(names)
	return names
}

// TestLabUpDown follows docs/try-it.md: lab up (twice), the example spot
// fleet applied, a Deployment created and scaled, its pods Running on
// Ready nodes Nodesmith launched, explain, lab down with no process left.
func TestLabUpDown(t *testing.T) {
	l, out := labUp(t)
	for _, want := range []string{"export KUBECONFIG=" + l.state.Kubeconfig, "kubectl apply -f ", "examples/spot-fleet.yaml", "nodesmith explain pod", "nodesmith lab down"} {
		if !strings.Contains(out, want) {
			t.Errorf("lab up does not print %q:\n%s", want, out)
		}
	}
	procs := sessionCommands(t, l.state.PID)
	for _, want := range []string{"etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "kwok", "nodesmith-contr"} {
		if !slices.Contains(procs, want) {
			t.Errorf("the lab's session has no %s process: %v", want, procs)
		}
	}
	if again := l.nodesmith(t, "lab", "up", "--dir", l.dir); !strings.Contains(again, "already running") {
		t.Errorf("a second lab up does not say the lab is already running:\n%s", again)
	}

	l.kubectl(t, "apply", "-f", "examples/spot-fleet.yaml")
	ready := l.runWeb(t, 12, "spot-fleet")
	got := l.kubectl(t, "get", "nodepools,nodeclaims,nodes")
	t.Logf("kubectl get nodepools,nodeclaims,nodes:\n%s", got)
	for _, n := range ready {
		if !strings.Contains(got, n) {
			t.Errorf("kubectl get does not list node %s:\n%s", n, got)
		}
	}
	pod := strings.TrimPrefix(strings.TrimSpace(strings.Split(l.kubectl(t, "get", "pods", "-l", "app=web", "-o", "name"), "\n")[0]), "pod/")
	explain := l.nodesmith(t, "explain", "pod", "default/"+pod)
	t.Logf("nodesmith explain pod default/%s:\n%s", pod, explain)
	var p corev1.Pod
	if err := l.kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: pod}, &p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(explain, p.Spec.NodeName) {
		t.Errorf("explain pod does not name the node %s the pod runs on:\n%s", p.Spec.NodeName, explain)
	}

	down := l.nodesmith(t, "lab", "down", "--dir", l.dir)
	if !strings.Contains(down, "down") {
		t.Errorf("lab down printed:\n%s", down)
	}
	if left := sessionCommands(t, l.state.PID); len(left) > 0 {
		t.Errorf("processes of the lab left after lab down: %v", left)
	}
	if _, err := os.Stat(l.dir); !os.IsNotExist(err) {
		t.Errorf("lab down left its state folder %s (%v)", l.dir, err)
	}
}
