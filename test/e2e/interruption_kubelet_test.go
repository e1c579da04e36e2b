package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// workerFinalizer keeps KWOK's pod-delete stage off a pod (see
// pkg/labkit/kwok-stages.yaml): the lab's process kubelet removes it when the
// pod's process has exited, as a kubelet reports a pod gone only then.
const workerFinalizer = "nodesmith.sh/lab-process-kubelet"

var (
	workerBinOnce sync.Once
	workerBin     string
	workerBinErr  error
)

// buildWorker compiles examples/workloads/sqs-worker once per lab.
func buildWorker() (string, error) {
	workerBinOnce.Do(func() {
		workerBin = filepath.Join(lab.Env.Dir, "sqs-worker")
		build := exec.Command("go", "build", "-o", workerBin, "./examples/workloads/sqs-worker")
		build.Dir = testenv.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			workerBinErr = fmt.Errorf("building the example worker: %v\n%s", err, out)
		}
	})
	return workerBin, workerBinErr
}

// processKubelet plays the kubelet for the pods of one app that KWOK
// cannot run: for every Running pod it starts the example worker binary
// with the container's args and env (plus an endpoint of the simulated AWS
// and credentials, which IRSA would provide: the workers' own role, so
// their endpoint serves the same world without the controller's policy); when the pod is deleted or
// evicted it sends SIGTERM, SIGKILL after the pod's grace period, and
// removes the pod (finalizer, then a zero-grace delete) once the process
// has exited. A process whose node's instance stopped dies with it
// (SIGKILL), as the machine would.
type processKubelet struct {
	t       *testing.T
	bin     string
	awsURL  string
	ns, app string
	logDir  string
	cancel  context.CancelFunc
	done    chan struct{}

	mu    sync.Mutex
	procs map[types.UID]*workerProc
	// processed counts, per message body, the deletes workers reported.
	processed map[string]int
	received  int
	// exits are the processes that ended, in order.
	exits []*workerProc
}

// workerProc is one pod's process.
type workerProc struct {
	pod, node string
	uid       types.UID
	cmd       *exec.Cmd
	started   time.Time
	grace     time.Duration
	// termAt is when SIGTERM was sent (zero: never); killed: SIGKILL was.
	termAt time.Time
	killed bool
	// inHand is the message received and not yet deleted, if any.
	inHand   string
	exitedAt time.Time
	exited   chan struct{}
}

// graceful reports whether the process ended on its own after SIGTERM.
func (w *workerProc) graceful() bool { return !w.termAt.IsZero() && !w.killed }

func startProcessKubelet(t *testing.T, ns, app string) *processKubelet {
	t.Helper()
	bin, err := buildWorker()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(lab.Env.Dir, "workers-"+app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The workers' AWS: the same world, served without the controller's
	// IAM policy (a real worker has its own role).
	srv := httptest.NewServer(fakeaws.NewServer(lab.World))
	t.Cleanup(srv.Close)
	c, cancel := context.WithCancel(context.Background())
	k := &processKubelet{t: t, bin: bin, awsURL: srv.URL, ns: ns, app: app, logDir: dir, cancel: cancel, done: make(chan struct{}),
		procs: map[types.UID]*workerProc{}, processed: map[string]int{}}
	go k.run(c)
	return k
}

// stop ends the loop, kills what still runs and frees every pod it held.
func (k *processKubelet) stop() {
	k.cancel()
	<-k.done
	k.mu.Lock()
	procs := make([]*workerProc, 0, len(k.procs))
	for _, p := range k.procs {
		procs = append(procs, p)
	}
	k.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(k.ns), client.MatchingLabels{"app": k.app}); err == nil {
		for i := range pods.Items {
			k.release(&pods.Items[i])
		}
	}
}

func (k *processKubelet) run(c context.Context) {
	defer close(k.done)
	for {
		k.sync(c)
		select {
		case <-c.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sync is one pass of the kubelet over the app's pods.
func (k *processKubelet) sync(c context.Context) {
	var pods corev1.PodList
	if err := kube().List(c, &pods, client.InNamespace(k.ns), client.MatchingLabels{"app": k.app}); err != nil {
		return
	}
	dead := deadNodes()
	seen := map[types.UID]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		seen[pod.UID] = true
		k.mu.Lock()
		p := k.procs[pod.UID]
		k.mu.Unlock()
		switch {
		case p == nil && pod.DeletionTimestamp.IsZero() && pod.Status.Phase == corev1.PodRunning && pod.Spec.NodeName != "" && !dead[pod.Spec.NodeName]:
			k.start(pod)
		case p != nil && dead[pod.Spec.NodeName]:
			k.kill(p)
		case p != nil && !pod.DeletionTimestamp.IsZero():
			k.terminate(p)
		case p == nil && !pod.DeletionTimestamp.IsZero():
			k.release(pod)
		}
		if p != nil && p.hasExited() && !pod.DeletionTimestamp.IsZero() {
			k.release(pod)
		}
	}
	// A pod force-deleted from the API: its containers are killed.
	k.mu.Lock()
	var orphans []*workerProc
	for uid, p := range k.procs {
		if !seen[uid] {
			orphans = append(orphans, p)
		}
	}
	k.mu.Unlock()
	for _, p := range orphans {
		k.kill(p)
	}
}

// deadNodes are the nodes whose instance is no longer running.
func deadNodes() map[string]bool {
	out := map[string]bool{}
	for _, in := range lab.World.Instances() {
		if in.State != fakeaws.StatePending && in.State != fakeaws.StateRunning {
			out[strings.ToLower(in.ID)] = true
		}
	}
	return out
}

func (p *workerProc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (k *processKubelet) start(pod *corev1.Pod) {
	ctr := pod.Spec.Containers[0]
	cmd := exec.Command(k.bin, ctr.Args...)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+k.awsURL, "AWS_ACCESS_KEY_ID=lab", "AWS_SECRET_ACCESS_KEY=lab", "AWS_EC2_METADATA_DISABLED=true")
	for _, e := range ctr.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := os.Create(filepath.Join(k.logDir, pod.Name+".stderr"))
	if err != nil {
		k.t.Errorf("worker log: %v", err)
		return
	}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stderr.Close()
		k.t.Errorf("worker stdout: %v", err)
		return
	}
	grace := time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	p := &workerProc{pod: pod.Name, node: pod.Spec.NodeName, uid: pod.UID, cmd: cmd, grace: grace, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		stderr.Close()
		k.t.Errorf("starting the worker of pod %s: %v", pod.Name, err)
		return
	}
	p.started = time.Now()
	k.mu.Lock()
	k.procs[pod.UID] = p
	k.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			k.event(p, sc.Bytes())
		}
		_ = cmd.Wait()
		stderr.Close()
		k.mu.Lock()
		p.exitedAt = time.Now()
		delete(k.procs, p.uid)
		k.exits = append(k.exits, p)
		k.mu.Unlock()
		close(p.exited)
	}()
}

// event reads one JSON line the worker printed.
func (k *processKubelet) event(p *workerProc, line []byte) {
	var ev struct {
		Event     string `json:"event"`
		MessageID string `json:"messageId"`
		Body      string `json:"body"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch ev.Event {
	case "received":
		k.received++
		p.inHand = ev.MessageID
	case "deleted":
		k.processed[ev.Body]++
		p.inHand = ""
	}
}

// terminate sends SIGTERM once, and SIGKILL once the grace period is over.
func (k *processKubelet) terminate(p *workerProc) {
	k.mu.Lock()
	first := p.termAt.IsZero()
	if first {
		p.termAt = time.Now()
	}
	overdue := !first && time.Since(p.termAt) > p.grace
	k.mu.Unlock()
	switch {
	case first:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	case overdue:
		k.kill(p)
	}
}

func (k *processKubelet) kill(p *workerProc) {
	k.mu.Lock()
	already := p.killed || p.hasExited()
	p.killed = true
	k.mu.Unlock()
	if !already {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// release removes the finalizer and deletes the pod with no grace left,
// the kubelet's last word on a pod whose containers are gone.
func (k *processKubelet) release(pod *corev1.Pod) {
	if slices.Contains(pod.Finalizers, workerFinalizer) {
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == workerFinalizer })
		if err := kube().Patch(ctx(), pod, patch); client.IgnoreNotFound(err) != nil {
			return
		}
	}
	_ = client.IgnoreNotFound(kube().Delete(ctx(), pod, client.GracePeriodSeconds(0)))
}

// snapshot is what the kubelet saw so far.
type kubeletSnapshot struct {
	Running   int
	Received  int
	Processed map[string]int
	Exits     []workerProc
}

func (k *processKubelet) snapshot() kubeletSnapshot {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := kubeletSnapshot{Running: len(k.procs), Received: k.received, Processed: map[string]int{}}
	for b, n := range k.processed {
		s.Processed[b] = n
	}
	for _, p := range k.exits {
		s.Exits = append(s.Exits, workerProc{pod: p.pod, node: p.node, uid: p.uid, started: p.started, grace: p.grace,
			termAt: p.termAt, killed: p.killed, inHand: p.inHand, exitedAt: p.exitedAt})
	}
	return s
}

// runningOn counts the live processes per node.
func (k *processKubelet) runningOn() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int{}
	for _, p := range k.procs {
		out[p.node]++
	}
	return out
}
