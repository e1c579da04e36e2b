package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/labkit"
)

const scalePool = "scale"

// BenchmarkLab500Nodes runs 5,000 pods on about 500 nodes in the lab and
// reports the controller's peak RSS over it (a fresh controller process, so
// the figure is this run's) and the time to all Running: pods of 750m on a
// pool of 8-vCPU types hold ten pods a node. It takes about 8 minutes on two
// cores, so it is a benchmark, run on demand, not a step of make test:
//
//	go test ./test/e2e -run '^$' -bench Lab500Nodes -benchtime 1x -timeout 30m
func BenchmarkLab500Nodes(b *testing.B) {
	for i := 0; i < b.N; i++ {
		scale500Nodes(b)
	}
}

func scale500Nodes(t testing.TB) {
	c := kube()
	base := &nsv1.NodePool{}
	if err := c.Get(ctx(), types.NamespacedName{Name: spotPool}, base); err != nil {
		t.Fatal(err)
	}
	np := &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: scalePool}, Spec: *base.Spec.DeepCopy()}
	np.Spec.Template.ObjectMeta.Labels = map[string]string{"fleet": scalePool}
	np.Spec.Template.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6g.2xlarge", "m6g.2xlarge", "c7g.2xlarge", "m7g.2xlarge"}},
		{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{nsv1.CapacityTypeSpot}},
		{Key: awsv1.LabelInstanceFamily, Operator: corev1.NodeSelectorOpExists},
	}
	np.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("6000"), corev1.ResourceMemory: resource.MustParse("40000Gi")}
	np.Spec.Disruption.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmpty
	np.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "100%"}}
	np.Spec.Weight = ptr.To(int32(1))
	if err := c.Create(ctx(), np); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Delete(ctx(), np); err != nil {
			t.Error(err)
		}
	}()
	lab.controller.Stop()
	if err := lab.startController(); err != nil {
		t.Fatal(err)
	}
	pid := lab.controller.Pid()
	start := time.Now()
	if err := c.Create(ctx(), deployment("big", scalePool, 5000, "750m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Minute, "5,000 pods running", allRunning(t, "big", 5000))
	up := time.Since(start)
	claims := claimsOf(t, scalePool)
	hwm := float64(labkit.ProcStatusKB(pid, "VmHWM")) / 1024
	t.Logf("5,000 pods (750m) Running on %d nodes %s after the Deployment; controller peak RSS %.0f MiB", len(claims), up.Round(100*time.Millisecond), hwm)
	if b, ok := t.(*testing.B); ok {
		b.ReportMetric(hwm, "peak-RSS-MiB")
		b.ReportMetric(up.Seconds(), "s-to-running")
		b.ReportMetric(float64(len(claims)), "nodes")
	}
	if len(claims) < 450 {
		t.Errorf("%d nodes for 5,000 pods of 750m on 8-vCPU types; want about 500", len(claims))
	}
	if err := c.Delete(ctx(), deployment("big", scalePool, 0, "750m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	gone := time.Now()
	waitFor(t, 8*time.Minute, "the scale pool drained", drained(t, scalePool))
	drain := time.Since(gone)
	t.Logf("5,000 pods: all %d nodes gone %s after the Deployment's deletion", len(claims), drain.Round(time.Second))
	if b, ok := t.(*testing.B); ok {
		b.ReportMetric(drain.Seconds(), "s-to-drained")
	}
}
