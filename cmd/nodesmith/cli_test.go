package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/costmetrics"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/kubesnapshot"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/whatif"
)

func execute(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func TestConvertCommand(t *testing.T) {
	src := "../../pkg/convert/testdata/karpenter-v1.yaml"
	out, stderr := run(t, "convert", "-f", src)
	want, err := os.ReadFile("../../pkg/convert/testdata/karpenter-v1.golden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("convert output differs from the package's golden file:\n%s", out)
	}
	if n := strings.Count(stderr, "warning: "); n != 5 {
		t.Errorf("stderr has %d warnings, want 5 (3 fields, 2 node roles the example policy cannot pass):\n%s", n, stderr)
	}
	// --node-role: both classes get the example's role, and say so.
	out, stderr = run(t, "convert", "-f", src, "--node-role", "NodesmithNodeRole-my-cluster")
	if n := strings.Count(out, "role: NodesmithNodeRole-my-cluster"); n != 2 || strings.Contains(out, "role: KarpenterNodeRole") {
		t.Errorf("with --node-role, %d classes name NodesmithNodeRole-my-cluster, want 2:\n%s", n, out)
	}
	if n := strings.Count(stderr, "replaced by NodesmithNodeRole-my-cluster (--node-role)"); n != 2 {
		t.Errorf("with --node-role, stderr names %d replaced roles, want 2:\n%s", n, stderr)
	}
	in, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
	var jsonOut bytes.Buffer
	root.SetOut(&jsonOut)
	root.SetIn(bytes.NewReader(in))
	root.SetArgs([]string{"convert", "-f", "-", "-o", "json"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(jsonOut.Bytes(), &list); err != nil || list.Kind != "List" || len(list.Items) != 3 {
		t.Errorf("json from stdin = %v, %s", err, jsonOut.String())
	}
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"convert", "-f", "x.yaml", "-o", "table"}, `--output "table": want one of yaml, json`},
		{[]string{"convert"}, `required flag(s) "filename" not set`},
		{[]string{"plan", "--snapshot", "s.yaml", "--from-cluster"}, "none of the others can be"},
		{[]string{"plan", "--snapshot", "testdata/plan/repack.yaml", "--unavailable", "m5.large:spot"}, "want TYPE:ZONE:CAPACITY-TYPE"},
		{[]string{"plan", "--snapshot", "testdata/plan/repack.yaml", "-o", "csv"}, `--output "csv"`},
		{[]string{"explain", "pod", "default/nope", "--snapshot", "testdata/plan/repack.yaml"}, "pod default/nope is not in the snapshot"},
		{[]string{"explain", "node", "nope", "--snapshot", "testdata/plan/repack.yaml"}, "node nope is not in the snapshot"},
		{[]string{"plan", "--snapshot", "../../pkg/convert/testdata/karpenter-v1.yaml"}, "not a snapshot"},
		{[]string{"plan", "--snapshot", "testdata/plan/repack.yaml", "--nodepools", "testdata/plan/repack.yaml"}, "neither a NodePool nor an EC2NodeClass"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := execute(tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestStructuredOutputs(t *testing.T) {
	out, _ := run(t, "plan", "--snapshot", "testdata/plan/repack.yaml", "-o", "json")
	var r whatif.PlanResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Pods != 12 || r.New.Nodes == 0 || len(r.Unschedulable) != 1 {
		t.Errorf("plan -o json = %v %+v", err, r)
	}
	out, _ = run(t, "explain", "pod", "-n", "default", "app", "--snapshot", "testdata/explain/taint.yaml", "-o", "yaml")
	if !strings.Contains(out, "reason: 'pool \"gpu\": taint nvidia.com/gpu=true:NoSchedule not tolerated'") {
		t.Errorf("explain pod -o yaml:\n%s", out)
	}
	out, _ = run(t, "explain", "node", "node-a", "--snapshot", "testdata/explain/node-empty.yaml", "-o", "json")
	var nr whatif.NodeReport
	if err := json.Unmarshal([]byte(out), &nr); err != nil || len(nr.Checks) != 1 || !nr.Checks[0].Candidate {
		t.Errorf("explain node -o json = %v %+v", err, nr)
	}
}

// TestPlanPrintsTheMetricsFigures checks the acceptance: from the
// same cluster objects, the controller's cost metrics and the $/h `plan`
// prints for a snapshot of them are the same figures, line by line.
func TestPlanPrintsTheMetricsFigures(t *testing.T) {
	ctx := context.Background()
	scheme, err := kubesnapshot.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: nsv1.NodePoolSpec{Template: nsv1.NodeClaimTemplate{
			Spec: nsv1.NodeClaimTemplateSpec{NodeClassRef: &nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}}}}},
	}
	for i, c := range []struct{ it, ct, price, zone string }{
		{"m6g.large", "spot", "0.0342", "us-east-1a"}, {"m6g.large", "spot", "0.0351", "us-east-1b"},
		{"c6g.xlarge", "on-demand", "0.136", "us-east-1a"}, {"r6g.large", "spot", "0.0421", "us-east-1c"},
	} {
		name := string(rune('a' + i))
		claim := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-" + name, Labels: map[string]string{nsv1.LabelNodePool: "general"}},
			Status: nsv1.NodeClaimStatus{NodeName: "node-" + name, InstanceType: c.it, CapacityType: c.ct, Zone: c.zone, Price: c.price}}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}
		objs = append(objs, claim, node)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&nsv1.NodeClaim{}).Build()

	m := metrics.MustNewForTest()
	if _, err := costmetrics.New(state.NewCluster(kube, clock.RealClock{}, time.Minute), nil, m, 0).Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	snap, _, err := kubesnapshot.Take(ctx, kube, "fake", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	var buf bytes.Buffer
	if err := writeData(&buf, outYAML, snap); err != nil { // what `nodesmith snapshot` writes
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := run(t, "plan", "--snapshot", file)
	section := out[strings.Index(out, "running today"):]
	row := regexp.MustCompile(`(?m)^\s+(general)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\$[0-9.]+)$`)
	rows := row.FindAllStringSubmatch(section, -1)
	if len(rows) != 3 {
		t.Fatalf("plan printed %d current lines, want 3:\n%s", len(rows), out)
	}
	total := 0.0
	for _, r := range rows {
		g := testutil.ToFloat64(m.CostPerHour.WithLabelValues(r[1], r[2], r[3]))
		if dollars(g) != r[5] {
			t.Errorf("plan prints %s/h for %s %s %s, the metric is %v", r[5], r[1], r[2], r[3], g)
		}
		total += g
	}
	if want := "total $" + strings.TrimPrefix(dollars(total), "$") + "/h"; !strings.Contains(section, want) {
		t.Errorf("plan does not print the metrics' total %q:\n%s", want, section)
	}
}
