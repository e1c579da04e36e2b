package provisioner

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclaim"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// cheapRunsOut is the fake cloud whose cheapest type, m5.large, runs out of
// capacity once one instance has launched: the next claims fall back to
// m5.xlarge, twice the size they were charged.
type cheapRunsOut struct {
	*fake.CloudProvider
}

func (c *cheapRunsOut) Create(ctx context.Context, claim *nsv1.NodeClaim) (*nsv1.NodeClaim, error) {
	out, err := c.CloudProvider.Create(ctx, claim)
	if err == nil {
		c.Lock()
		for _, it := range c.InstanceTypes {
			if it.Name == "m5.large" {
				for i := range it.Offerings {
					it.Offerings[i].Available = false
				}
			}
		}
		c.Unlock()
	}
	return out, err
}

func (c *cheapRunsOut) CreateAll(ctx context.Context, claims []*nsv1.NodeClaim) []cloudprovider.CreateResult {
	out := make([]cloudprovider.CreateResult, len(claims))
	for i, cl := range claims {
		out[i].Claim, out[i].Err = c.Create(ctx, cl)
	}
	return out
}

// TestProvisionKeepsTightLimitsThroughFallbacks: four pods that each need
// a node of their own (a host port) in a pool limited to 8 cpu whose
// claims must keep two instance types (minValues 2: m5.large, 2 cpu, and
// m5.xlarge, 4 cpu). Charged their largest option (4 cpu) two claims would
// fit; charged their cheapest (2 cpu), three are planned, each with room
// for both types at its turn (2+2, 4+2, 6+2). The cheapest type runs out
// after the first launch: the second claim launches as m5.xlarge within
// what is left (6 cpu), and the third, whose options within the 2 cpu left
// miss minValues, is refused rather than launched past the limit.
func TestProvisionKeepsTightLimitsThroughFallbacks(t *testing.T) {
	ctx := context.Background()
	seq++
	id := fmt.Sprintf("%d-%d", time.Now().UnixNano()%100000, seq)
	cloud := &cheapRunsOut{CloudProvider: fake.New(
		fake.InstanceType("m5.large", 2, 8, 0.096, "zone-a"),
		fake.InstanceType("m5.xlarge", 4, 16, 0.192, "zone-a"),
	)}
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(h.Client, clk, time.Minute).ListSharedFrom(state.InformerLister{Cache: h.Mgr.GetCache()})
	rec, _ := controllertest.Recorder(clk)
	m := controllertest.Metrics()
	launcher := nodeclaim.NewLauncher(h.Client, cloud, cluster, clk, rec, m, nil)
	p := New(h.Client, cloud, cluster, launcher, clk, rec, m, Options{})

	pool := controllertest.NodePool("pool-" + id)
	pool.Spec.Template.ObjectMeta.Labels = map[string]string{"fixture": id}
	pool.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("8")}
	pool.Spec.Template.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge"}, MinValues: ptr.To(2)}}
	if err := h.Direct.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pool)
	f := &fixture{p: p, cluster: cluster, clk: clk, pool: pool, ns: "prov-" + id}
	if err := h.Direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		pod := controllertest.Pod(f.ns, fmt.Sprintf("p%d", i), "1500m")
		pod.Spec.NodeSelector = pool.Spec.Template.ObjectMeta.Labels
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		if err := h.Direct.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
		if err := h.Direct.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		h.Cached(t, pod)
	}

	if err := p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	launched := resource.Quantity{}
	var types []string
	for _, c := range f.claims(t) {
		if !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionLaunched) {
			t.Errorf("claim %s left unlaunched", c.Name)
			continue
		}
		launched.Add(*c.Status.Capacity.Cpu())
		types = append(types, c.Status.InstanceType)
	}
	if launched.Cmp(resource.MustParse("8")) > 0 {
		t.Fatalf("launched %s cpu (%v) in a pool limited to 8", launched.String(), types)
	}
	if n := len(cloud.Calls("Create")); n != 2 {
		t.Fatalf("%d Create calls, want 2 (the third claim refused before launching): launched %v", n, types)
	}
	if len(types) != 2 || launched.Cmp(resource.MustParse("6")) != 0 {
		t.Fatalf("launched %v (%s cpu), want m5.large and m5.xlarge (6 cpu)", types, launched.String())
	}
}
