package controllertest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsevents "github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// Harness is a started cache over the test apiserver.
type Harness struct {
	Env *testenv.Env
	// Client reads from the cache (with the field indexes) and writes to the apiserver.
	Client client.Client
	// Direct bypasses the cache.
	Direct client.Client
	Mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan struct{}
}

// Start builds a manager with no controllers, registers the indexes and
// starts its cache.
func Start(env *testenv.Env) (*Harness, error) {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The controller's cache, transforms included.
		Cache: state.CacheOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("building the manager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := state.IndexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	syncCtx, syncDone := context.WithTimeout(ctx, time.Minute)
	defer syncDone()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return nil, fmt.Errorf("the cache did not sync")
	}
	return &Harness{Env: env, Client: mgr.GetClient(), Direct: env.Client, Mgr: mgr, cancel: cancel, done: done}, nil
}

// Main is a TestMain body: it starts the test bed and the harness once, runs
// the tests, and stops the harness before the apiserver so no watch holds
// the apiserver's shutdown.
func Main(m *testing.M, set func(*Harness)) int {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: test bed: %v\n", err)
		return 1
	}
	h, err := Start(env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: harness: %v\n", err)
		_ = env.Stop()
		return 1
	}
	set(h)
	code := m.Run()
	h.Stop()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the test bed: %v\n", err)
		return 1
	}
	return code
}

// Stop ends the manager.
func (h *Harness) Stop() {
	h.cancel()
	<-h.done
}

// Recorder returns a de-duplicating recorder over a fake that keeps the
// last 1000 events.
func Recorder(clk clock.Clock) (*nsevents.Recorder, *events.FakeRecorder) {
	fake := events.NewFakeRecorder(1000)
	return nsevents.NewRecorder(fake, clk, time.Minute), fake
}

// Metrics returns collectors on a private registry.
func Metrics() *metrics.Metrics {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	return m
}

// Eventually polls cond until it returns nil or 20 s pass.
func Eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Cached waits until the cache has o at least at the resourceVersion the
// apiserver last returned for it.
func (h *Harness) Cached(t *testing.T, o client.Object) {
	t.Helper()
	want := o.GetResourceVersion()
	Eventually(t, fmt.Sprintf("cache catching up with %T %s", o, o.GetName()), func() error {
		got := o.DeepCopyObject().(client.Object)
		if err := h.Client.Get(context.Background(), client.ObjectKeyFromObject(o), got); err != nil {
			return err
		}
		g, _ := strconv.ParseUint(got.GetResourceVersion(), 10, 64)
		w, _ := strconv.ParseUint(want, 10, 64)
		if g < w {
			return fmt.Errorf("cache at resourceVersion %s, want %s", got.GetResourceVersion(), want)
		}
		return nil
	})
}

// NodePool builds a minimal pool.
func NodePool(name string) *nsv1.NodePool {
	return &nsv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: nsv1.NodePoolSpec{Template: nsv1.NodeClaimTemplate{Spec: nsv1.NodeClaimTemplateSpec{
			NodeClassRef: &nsv1.NodeClassReference{Group: "aws.nodesmith.sh", Kind: "EC2NodeClass", Name: "default"},
		}}},
	}
}

// NodeClaim builds a claim of pool.
func NodeClaim(name, pool string) *nsv1.NodeClaim {
	return &nsv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nsv1.LabelNodePool: pool}},
		Spec: nsv1.NodeClaimSpec{
			NodeClassRef: &nsv1.NodeClassReference{Group: "aws.nodesmith.sh", Kind: "EC2NodeClass", Name: "default"},
			Resources:    nsv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
}

// Node builds a Ready node with providerID and allocatable cpu.
func Node(name, providerID string, cpu string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
}

// SetNodeReady writes the node's Ready condition.
func (h *Harness) SetNodeReady(t *testing.T, node *corev1.Node, ready corev1.ConditionStatus) {
	t.Helper()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Test",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := h.Direct.Status().Update(context.Background(), node); err != nil {
		t.Fatalf("setting node %s Ready=%s: %v", node.Name, ready, err)
	}
	h.Cached(t, node)
}

// Pod builds a pod requesting cpu.
func Pod(ns, name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}
