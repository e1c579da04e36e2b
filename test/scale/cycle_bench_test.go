// Package scale measures the controller's cluster state and provisioning
// cycle at fleet sizes no lab on this machine reaches: objects are fed to
// an in-memory API server (the simulator's store, behind the same
// controller-runtime client interface the controller's cache serves) and
// the real provisioner runs one cycle over them.
package scale

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	nsevents "github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclaim"
	"github.com/nodesmith/nodesmith/pkg/controllers/provisioner"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/simulator"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
)

// fleet is the benchmark's cluster: nodes (each with its NodeClaim) of
// 16 vCPU / 64 GiB carrying bound pods, and pending pods marked
// Unschedulable by kube-scheduler.
type fleet struct {
	nodes, boundPerNode, pending int
}

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// build fills an API server with the fleet and returns its client.
func build(tb testing.TB, f fleet, clk *clocktesting.FakeClock) (client.Client, *apiserver.Server) {
	tb.Helper()
	ctx := context.Background()
	sch, err := simulator.Scheme()
	if err != nil {
		tb.Fatal(err)
	}
	api := apiserver.New(sch, clk, 1)
	if err := state.IndexFields(ctx, api); err != nil {
		tb.Fatal(err)
	}
	kube := api.Client()
	create := func(o client.Object) {
		if err := kube.Create(ctx, o); err != nil {
			tb.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	pool := controllertest.NodePool("fleet")
	pool.Spec.Template.ObjectMeta.Labels = map[string]string{"fleet": "scale"}
	create(pool)
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}})
	now := metav1.NewTime(clk.Now())
	for i := 0; i < f.nodes; i++ {
		name := fmt.Sprintf("node-%05d", i)
		zone := zones[i%len(zones)]
		pid := fmt.Sprintf("aws:///%s/i-%017x", zone, i)
		c := controllertest.NodeClaim(fmt.Sprintf("fleet-%05d", i), pool.Name)
		c.Labels["fleet"] = "scale"
		create(c)
		c.Status.ProviderID, c.Status.NodeName = pid, name
		c.Status.InstanceType, c.Status.CapacityType, c.Status.Zone, c.Status.Price = "m5.4xlarge", nsv1.CapacityTypeSpot, zone, "0.3000"
		for _, t := range []string{nsv1.ConditionLaunched, nsv1.ConditionRegistered, nsv1.ConditionInitialized} {
			lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(t, true, "", ""), c.Generation, now)
		}
		if err := kube.Status().Update(ctx, c); err != nil {
			tb.Fatal(err)
		}
		n := controllertest.Node(name, pid, "16")
		n.Labels = map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone, "fleet": "scale",
			nsv1.LabelNodePool: pool.Name, corev1.LabelInstanceTypeStable: "m5.4xlarge", nsv1.LabelCapacityType: nsv1.CapacityTypeSpot}
		n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("60Gi")
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		create(n)
		for j := 0; j < f.boundPerNode; j++ {
			p := pod(fmt.Sprintf("bound-%05d-%02d", i, j), "1300m", "4608Mi")
			p.Spec.NodeName = name
			p.Status.Phase = corev1.PodRunning
			create(p)
		}
	}
	for i := 0; i < f.pending; i++ {
		// Half fit the room left on the nodes, half (20Gi) need new ones.
		p := pod(fmt.Sprintf("pending-%05d", i), "500m", "1Gi")
		if i%2 == 1 {
			p = pod(fmt.Sprintf("pending-%05d", i), "2", "20Gi")
		}
		create(p)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, LastTransitionTime: now}}
		if err := kube.Status().Update(ctx, p); err != nil {
			tb.Fatal(err)
		}
	}
	return kube, api
}

// pod is a Deployment-shaped pod: labels, an owner, one container.
func pod(name, cpu, mem string) *corev1.Pod {
	app := "app-" + name[len(name)-2:]
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: name, Labels: map[string]string{"app": app, "pod-template-hash": "7d4b9c"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d4b9c",
				UID: types.UID("rs-" + app), Controller: ptrTrue()}}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"fleet": "scale"},
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1.0",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}},
		},
	}
}

func init() { log.SetLogger(logr.Discard()) }

func ptrTrue() *bool { t := true; return &t }

// BenchmarkProvisioningCycle10kNodes is one provisioning cycle of the real
// provisioner — snapshot of the cluster state, pending-pod gathering,
// solve, NodeClaims created and launched through the cloud interface —
// over 10,000 nodes carrying 100,000 pods with 1,000 more pending: half
// fit the room left on existing nodes (3 vCPU and 15Gi free on each),
// half (2 vCPU, 20Gi) need new nodes. It reports the cycle's time, the
// heap the stored objects and the controller's state take (heap-MiB, after
// a GC with the fleet loaded) and the process's peak RSS (peak-RSS-MiB).
//
//	go test ./test/scale -run '^$' -bench ProvisioningCycle10kNodes -benchtime 3x
func BenchmarkProvisioningCycle10kNodes(b *testing.B) {
	benchmarkCycle(b, fleet{nodes: 10000, boundPerNode: 10, pending: 1000})
}

// BenchmarkProvisioningCycle100kPending is one provisioning cycle with
// 100,000 pods pending at once and no node yet (issue 24: under 10 s, where
// Karpenter users report a 33-minute pass at 40,000): the snapshot, the
// gathering of 100,000 pending pods, the solve and every NodeClaim written
// and handed to the cloud interface. Half the pods are 500m/1Gi, half
// 2 vCPU/20Gi.
//
//	go test ./test/scale -run '^$' -bench ProvisioningCycle100kPending -benchtime 1x -count 3
func BenchmarkProvisioningCycle100kPending(b *testing.B) {
	benchmarkCycle(b, fleet{pending: 100000})
}

func benchmarkCycle(b *testing.B, f fleet) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	kube, api := build(b, f, clk)
	cloud := fake.New(
		fake.InstanceType("m5.xlarge", 4, 16, 0.192, zones...),
		fake.InstanceType("m5.4xlarge", 16, 64, 0.768, zones...),
		fake.InstanceType("m5.12xlarge", 48, 192, 2.304, zones...),
	)
	// The harness's own garbage (building 100,000 objects) is returned to
	// the OS and the peak-RSS mark reset, so the peak is the fleet held in
	// memory plus what the cycles allocate.
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap := float64(ms.HeapInuse) / (1 << 20)
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("peak RSS not reset (%v): it includes building the fleet", err)
	}
	// Events are dropped (a FakeRecorder without a channel): the test
	// harness's buffered one would block once 1,000 were unread.
	rec := nsevents.NewRecorder(&events.FakeRecorder{}, clk, time.Minute)
	m := controllertest.Metrics()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// A fresh controller state each time: the previous cycle's
		// nominations would hold the pending pods.
		// The snapshot reads the store's own objects, as the controller
		// reads its informers'.
		cluster := state.NewCluster(kube, clk, time.Minute).ListSharedFrom(api)
		launcher := nodeclaim.NewLauncher(kube, cloud, cluster, clk, rec, m, nil)
		seq := 0
		p := provisioner.New(kube, cloud, cluster, launcher, clk, rec, m, provisioner.Options{LaunchWorkers: 1,
			NewName: func(pool string) string { seq++; return fmt.Sprintf("%s-%d-%d", pool, i, seq) }})
		b.StartTimer()
		if err := p.Provision(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		// Listed without copies (the harness's own garbage would count in
		// the peak RSS); the few claims changed are copied first.
		var claims nsv1.NodeClaimList
		if err := kube.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
			b.Fatal(err)
		}
		created := len(claims.Items) - f.nodes
		if created == 0 {
			b.Fatal("the cycle created no NodeClaim for the pending pods")
		}
		b.ReportMetric(float64(created), "claims")
		for j := range claims.Items {
			if c := claims.Items[j].DeepCopy(); c.Status.NodeName == "" {
				// Gone at once: no termination controller runs here.
				c.Finalizers = nil
				if err := kube.Update(ctx, c); err != nil {
					b.Fatal(err)
				}
				if err := kube.Delete(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(peakRSS(b), "peak-RSS-MiB")
}

// peakRSS is the process's VmHWM in MiB.
func peakRSS(tb testing.TB) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Logf("no /proc/self/status: %v", err)
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}
