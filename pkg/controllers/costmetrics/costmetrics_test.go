package costmetrics

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/overlay"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/cost"
	"github.com/nodesmith/nodesmith/pkg/kubesnapshot"
	"github.com/nodesmith/nodesmith/pkg/whatif"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

// launched creates a claim of pool with the status a launch writes, and
// its registered node with allocatable cpu and memory.
func launched(t *testing.T, name, pool, it, ct, price string) *nsv1.NodeClaim {
	t.Helper()
	ctx := context.Background()
	c := controllertest.NodeClaim(name, pool)
	if err := h.Direct.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status = nsv1.NodeClaimStatus{ProviderID: "aws:///us-east-1a/i-" + name, NodeName: name + "-node", InstanceType: it,
		CapacityType: ct, Zone: "us-east-1a", Price: price,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}
	if err := h.Direct.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	n := controllertest.Node(name+"-node", c.Status.ProviderID, "2")
	n.Labels[corev1.LabelInstanceTypeStable] = it
	n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("4Gi")
	if err := h.Direct.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	if err := h.Direct.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, c)
	h.Cached(t, n)
	return c
}

func boundPod(t *testing.T, ns, name, node, cpu, mem string) {
	t.Helper()
	p := controllertest.Pod(ns, name, cpu)
	p.Spec.NodeName = node
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
	if err := h.Direct.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !isExists(err) {
		t.Fatal(err)
	}
	if err := h.Direct.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
}

// TestCostMetricsMatchPlan is the acceptance check: the metrics the
// controller exports and the current $/h `nodesmith plan` reports for a
// snapshot of the same cluster are the same figures, line by line.
func TestCostMetricsMatchPlan(t *testing.T) {
	ctx := context.Background()
	for _, np := range []*nsv1.NodePool{controllertest.NodePool("spot"), controllertest.NodePool("steady")} {
		if err := h.Direct.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	launched(t, "a", "spot", "m6g.large", nsv1.CapacityTypeSpot, "0.0342")
	launched(t, "b", "spot", "m6g.large", nsv1.CapacityTypeSpot, "0.0351")
	launched(t, "c", "spot", "c6g.large", nsv1.CapacityTypeSpot, "0.0289")
	gone := launched(t, "d", "steady", "m7i.large", nsv1.CapacityTypeOnDemand, "0.1008")
	launched(t, "e", "steady", "m7i.large", nsv1.CapacityTypeOnDemand, "0.1008")
	// web requests half of a's cpu and memory; batch all of c's cpu.
	boundPod(t, "web", "web-1", "a-node", "1", "2Gi")
	boundPod(t, "batch", "batch-1", "c-node", "2", "1Gi")

	m := controllertest.Metrics()
	c := New(state.NewCluster(h.Client, clock.RealClock{}, time.Minute), nil, m, 0)
	if res, err := c.Reconcile(ctx); err != nil || res.RequeueAfter != DefaultInterval {
		t.Fatalf("Reconcile = %+v, %v", res, err)
	}
	gauge := func(pool, ct, it string) float64 {
		return testutil.ToFloat64(m.CostPerHour.WithLabelValues(pool, ct, it))
	}
	tests := []struct {
		pool, ct, it string
		want         float64
	}{
		{"spot", "spot", "c6g.large", 0.0289},
		{"spot", "spot", "m6g.large", 0.0342 + 0.0351},
		{"steady", "on-demand", "m7i.large", 2 * 0.1008},
	}
	for _, tt := range tests {
		if got := gauge(tt.pool, tt.ct, tt.it); !near(got, tt.want) {
			t.Errorf("cost{%s,%s,%s} = %v, want %v", tt.pool, tt.ct, tt.it, got, tt.want)
		}
	}
	// a: web takes (1/2 + 2/4)/2 = 0.5 of 0.0342; c: batch takes (2/2 + 1/4)/2 = 0.625 of 0.0289.
	if got := testutil.ToFloat64(m.CostNamespace.WithLabelValues("web")); !near(got, 0.5*0.0342) {
		t.Errorf("web share = %v", got)
	}
	if got := testutil.ToFloat64(m.CostNamespace.WithLabelValues("batch")); !near(got, 0.625*0.0289) {
		t.Errorf("batch share = %v", got)
	}
	total := 0.0342 + 0.0351 + 0.0289 + 2*0.1008
	if idle := testutil.ToFloat64(m.CostIdle); !near(idle+0.5*0.0342+0.625*0.0289, total) {
		t.Errorf("idle %v and the shares do not add up to the fleet's %v", idle, total)
	}

	// The same cluster through the CLI's path: snapshot, then plan.
	snap, _, err := kubesnapshot.Take(ctx, h.Direct, "envtest", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r, err := whatif.Plan(snap, whatif.ModePending, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Nodesmith.Lines) != len(tests) {
		t.Fatalf("plan's current lines = %+v, want %d", r.Nodesmith.Lines, len(tests))
	}
	sum := 0.0
	for _, l := range r.Nodesmith.Lines {
		if g := gauge(l.NodePool, l.CapacityType, l.InstanceType); g != l.PerHour {
			t.Errorf("plan says %s/%s/%s costs %v/h, the metric %v", l.NodePool, l.CapacityType, l.InstanceType, l.PerHour, g)
		}
		sum += l.PerHour
	}
	if sum != r.Nodesmith.PerHour || !near(sum, total) {
		t.Errorf("plan's total %v (lines %v), want %v", r.Nodesmith.PerHour, sum, total)
	}

	// A claim being deleted stops counting; its series goes when its type does.
	if err := h.Direct.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the deleted claim leaving the metric", func() error {
		if _, err := c.Reconcile(ctx); err != nil {
			return err
		}
		if got := gauge("steady", "on-demand", "m7i.large"); !near(got, 0.1008) {
			return errorf("m7i.large = %v, want one claim's price", got)
		}
		return nil
	})
}

func TestDeletedSeriesGo(t *testing.T) {
	m := controllertest.Metrics()
	c := New(nil, nil, m, 0)
	c.export(costLines([3]string{"p", "spot", "a"}, [3]string{"p", "spot", "b"}), sharesOf("x"))
	c.export(costLines([3]string{"p", "spot", "a"}), sharesOf("y"))
	if n := testutil.CollectAndCount(m.CostPerHour); n != 1 {
		t.Errorf("cost series = %d, want only p/spot/a", n)
	}
	if n := testutil.CollectAndCount(m.CostNamespace); n != 1 || testutil.ToFloat64(m.CostNamespace.WithLabelValues("y")) != 1 {
		t.Errorf("namespace series = %d, want only y", n)
	}
}

func costLines(keys ...[3]string) cost.Breakdown {
	var b cost.Breakdown
	for _, k := range keys {
		b.Lines = append(b.Lines, cost.Line{NodePool: k[0], CapacityType: k[1], InstanceType: k[2], Nodes: 1, PerHour: 1})
	}
	return b
}

func sharesOf(ns string) cost.Shares { return cost.Shares{ByNamespace: map[string]float64{ns: 1}} }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func isExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// onlyPools is a cloud that has instance types for the named pools only
// (the other tests' pools have no node class: plan and the metrics price
// their nodes at their launch price alike).
type onlyPools struct {
	cloudprovider.CloudProvider
	pools map[string]bool
}

func (o onlyPools) GetInstanceTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error) {
	if !o.pools[pool.Name] {
		return nil, fmt.Errorf("nodepool %s has no node class here", pool.Name)
	}
	return o.CloudProvider.GetInstanceTypes(ctx, pool)
}

// TestCostMetricsMatchPlanWithOverlayAndCommitment: a NodeOverlay that
// takes 10 % off m7i.large on-demand and an EC2 Instance Savings Plan of
// $0.12/h for m7i in us-east-1 change what the metrics say the nodes cost,
// and `nodesmith plan` says the same: the first on-demand node (by claim
// name) is covered whole at the overlaid $0.09072/h, the second for the
// $0.02928 left, the spot node not at all.
func TestCostMetricsMatchPlanWithOverlayAndCommitment(t *testing.T) {
	ctx := context.Background()
	id := fmt.Sprintf("%d", time.Now().UnixNano()%1000000)
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "priced-" + id}, Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-0abc"}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0abc"}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       ptr.To("nodes"),
	}}
	if err := h.Direct.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-0abc", Zone: "us-east-1a"}}
	if err := h.Direct.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	pool := controllertest.NodePool("priced-" + id)
	pool.Spec.Template.Spec.NodeClassRef.Name = nc.Name
	if err := h.Direct.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pool)
	od := []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m7i.large"}},
		{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{nsv1.CapacityTypeOnDemand}}}
	tenOff := &nsv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "ten-off-" + id},
		Spec: nsv1alpha1.NodeOverlaySpec{Requirements: od, PriceAdjustment: ptr.To("-10%")}}
	plan := &nsv1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: "m7i-plan-" + id}, Spec: nsv1alpha1.CommitmentSpec{
		Type: nsv1alpha1.CommitmentEC2InstanceSavingsPlan, Family: "m7i", Region: "us-east-1", HourlyCommitment: "0.12"}}
	for _, o := range []client.Object{tenOff, plan} {
		if err := h.Direct.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		h.Cached(t, o)
		t.Cleanup(func() { _ = h.Direct.Delete(context.Background(), o) })
	}
	// The claims launched at list price (the launch price is not what they cost now).
	launched(t, "od-a-"+id, pool.Name, "m7i.large", nsv1.CapacityTypeOnDemand, "0.1008")
	launched(t, "od-b-"+id, pool.Name, "m7i.large", nsv1.CapacityTypeOnDemand, "0.1008")
	launched(t, "spot-"+id, pool.Name, "m7i.large", nsv1.CapacityTypeSpot, "0.0500")

	// The cloud every controller reads: the catalog's m7i.large in
	// us-east-1a (as plan builds it for the class), the overlays applied.
	specs, err := catalog.Specs()
	if err != nil {
		t.Fatal(err)
	}
	var m7i []*catalog.InstanceType
	for _, it := range catalog.FromSpecs(specs, catalog.Options{Region: "us-east-1", Zones: []string{"us-east-1a"}}).Types() {
		if it.Name == "m7i.large" {
			m7i = append(m7i, it)
		}
	}
	cloud := overlay.Wrap(onlyPools{CloudProvider: fake.New(m7i...), pools: map[string]bool{pool.Name: true}}, h.Client)
	m := controllertest.Metrics()
	c := New(state.NewCluster(h.Client, clock.RealClock{}, time.Minute), cloud, m, 0)
	if _, err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	gauge := func(pool, ct, it string) float64 {
		return testutil.ToFloat64(m.CostPerHour.WithLabelValues(pool, ct, it))
	}
	if got, want := gauge(pool.Name, nsv1.CapacityTypeOnDemand, "m7i.large"), 0.1008*0.9-(0.12-0.1008*0.9); !near(got, want) {
		t.Errorf("on-demand m7i.large costs %v/h in the metric, want %v (10%% off, the commitment's $0.12 used up)", got, want)
	}
	spot := gauge(pool.Name, nsv1.CapacityTypeSpot, "m7i.large")
	if spot <= 0 || near(spot, 0.05) {
		t.Errorf("spot m7i.large costs %v/h in the metric, want the catalog's spot price, not the launch price", spot)
	}

	snap, _, err := kubesnapshot.Take(ctx, h.Direct, "envtest", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r, err := whatif.Plan(snap, whatif.ModePending, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, l := range r.Nodesmith.Lines {
		if g := gauge(l.NodePool, l.CapacityType, l.InstanceType); !near(g, l.PerHour) {
			t.Errorf("plan says %s/%s/%s costs %v/h, the metric %v", l.NodePool, l.CapacityType, l.InstanceType, l.PerHour, g)
		}
		if l.NodePool == pool.Name {
			lines++
		}
	}
	if lines != 2 {
		t.Errorf("plan has %d lines of pool %s, want on-demand and spot: %+v", lines, pool.Name, r.Nodesmith.Lines)
	}
}
