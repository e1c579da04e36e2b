package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestControlPlane brings up the lab the end-to-end tests use: the
// apiserver with its full admission chain, kube-controller-manager and
// kube-scheduler. It checks what each adds: a default ServiceAccount in a
// new namespace (controller-manager), a pod admitted with it (ServiceAccount
// admission) and bound to a node (scheduler).
func TestControlPlane(t *testing.T) {
	start := time.Now()
	e, err := Start(Options{FullAdmission: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver and etcd up in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		stop := time.Now()
		if err := e.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		t.Logf("control plane down in %s", time.Since(stop).Round(time.Millisecond))
	})
	ctx := t.Context()
	kcm, err := e.StartControllerManager(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := e.StartScheduler(ctx)
	if err != nil {
		t.Fatal(err)
	}
	logsOnFailure(t, kcm, sched)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lab"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Like a kubelet registering: status comes with the create, so there is
	// no later write to race kube-controller-manager's taint updates.
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "lab-node", Labels: map[string]string{corev1.LabelHostname: "lab-node"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0123456789abcdef0"},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if err := e.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}

	sa := &corev1.ServiceAccount{}
	if err := poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: "lab", Name: "default"}, sa)
		return err == nil, client.IgnoreNotFound(err)
	}); err != nil {
		t.Fatalf("no default ServiceAccount from kube-controller-manager: %v", err)
	}

	// Nothing plays kubelet here, so the node keeps its not-ready taint; the
	// pod tolerates it so that only the scheduler decides.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "web"},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "web", Image: "web:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	if err := e.Client.Create(ctx, pod); err != nil {
		t.Fatalf("creating a pod with ServiceAccount admission on: %v", err)
	}
	if pod.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName = %q, want default (set by admission)", pod.Spec.ServiceAccountName)
	}
	if err := poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		return pod.Spec.NodeName != "", nil
	}); err != nil {
		t.Fatalf("pod not bound by kube-scheduler: %v", err)
	}
	if pod.Spec.NodeName != "lab-node" {
		t.Errorf("pod bound to %q, want lab-node", pod.Spec.NodeName)
	}
}

func TestStartControlPlaneComponentReportsEarlyExit(t *testing.T) {
	e := &Env{AssetsDir: "/bin", Dir: t.TempDir()}
	_, err := e.StartControlPlaneComponent(t.Context(), "false")
	if err == nil || !containsAll(err.Error(), "false exited at start") {
		t.Fatalf("err = %v, want an early-exit error", err)
	}
	if _, err := e.StartControlPlaneComponent(t.Context(), "no-such-binary"); err == nil || !containsAll(err.Error(), "run make tools") {
		t.Fatalf("err = %v, want a missing-binary error naming make tools", err)
	}
}

func poll(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return ok, err
	})
}

func logsOnFailure(t *testing.T, procs ...*Process) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range procs {
				t.Logf("--- %s (last lines)\n%s", p.Name, p.LogTail(30))
			}
		}
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
