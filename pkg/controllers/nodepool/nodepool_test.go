package nodepool

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

func TestStatus(t *testing.T) {
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	readyClass := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "ready-" + suffix},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"a": "b"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"a": "b"}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       ptr("role"),
		},
	}
	brokenClass := readyClass.DeepCopy()
	brokenClass.Name = "broken-" + suffix
	unresolvedClass := readyClass.DeepCopy()
	unresolvedClass.Name = "unresolved-" + suffix
	for _, nc := range []*awsv1.EC2NodeClass{readyClass, brokenClass, unresolvedClass} {
		if err := h.Direct.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	readyClass.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if err := h.Direct.Status().Update(ctx, readyClass); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, readyClass)
	brokenClass.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "SubnetsNotFound",
		Message: "no subnets matched selector {a: b}", LastTransitionTime: metav1.Now()}}
	if err := h.Direct.Status().Update(ctx, brokenClass); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, brokenClass)

	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "us-east-1a"), fake.InstanceType("m5.xlarge", 4, 16, 0.192, "us-east-1a"))
	tests := []struct {
		name       string
		class      string
		reqs       []nsv1.NodeSelectorRequirementWithMinValues
		claims     int
		inFlight   int // claims that have not launched: no capacity, may launch as m5.large
		wantReady  metav1.ConditionStatus
		wantReason string
		wantNodes  int64
		wantCPU    string
	}{
		{name: "ready class, two claims", class: readyClass.Name, claims: 2, wantReady: metav1.ConditionTrue, wantReason: "Ready", wantNodes: 2, wantCPU: "8"},
		// The in-flight claim asks for 1 cpu but counts as the m5.large it
		// is expected to launch as (2 cpu; its cheapest option, not its
		// largest, m5.xlarge), as the solver charges it.
		{name: "an in-flight claim counts its expected launch", class: readyClass.Name, claims: 1, inFlight: 1, wantReady: metav1.ConditionTrue, wantReason: "Ready", wantNodes: 2, wantCPU: "6"},
		{name: "class not ready keeps its reason", class: brokenClass.Name, wantReady: metav1.ConditionFalse, wantReason: "SubnetsNotFound", wantCPU: "0"},
		{name: "class missing", class: "missing-" + suffix, wantReady: metav1.ConditionFalse, wantReason: "NodeClassNotFound", wantCPU: "0"},
		{name: "class never resolved is not ready", class: unresolvedClass.Name, wantReady: metav1.ConditionFalse, wantReason: "NodeClassNotResolved", wantCPU: "0"},
		{name: "requirements no instance type meets", class: readyClass.Name, wantCPU: "0", wantReady: metav1.ConditionFalse, wantReason: "NoInstanceTypeMatches",
			reqs: []nsv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m9.huge"}}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := controllertest.NodePool(fmt.Sprintf("pool-%s-%d", suffix, i))
			pool.Spec.Template.Spec.NodeClassRef.Name = tt.class
			pool.Spec.Template.Spec.Requirements = tt.reqs
			pool.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("100")}
			if err := h.Direct.Create(ctx, pool); err != nil {
				t.Fatal(err)
			}
			h.Cached(t, pool)
			for j := 0; j < tt.claims; j++ {
				c := controllertest.NodeClaim(fmt.Sprintf("%s-%d", pool.Name, j), pool.Name)
				if err := h.Direct.Create(ctx, c); err != nil {
					t.Fatal(err)
				}
				c.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
				if err := h.Direct.Status().Update(ctx, c); err != nil {
					t.Fatal(err)
				}
				h.Cached(t, c)
			}
			for j := 0; j < tt.inFlight; j++ {
				c := controllertest.NodeClaim(fmt.Sprintf("%s-inflight-%d", pool.Name, j), pool.Name)
				c.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge"}}}
				if err := h.Direct.Create(ctx, c); err != nil {
					t.Fatal(err)
				}
				h.Cached(t, c)
			}
			c := New(h.Client, cloud, clock.RealClock{}, controllertest.Metrics())
			if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: pool.Name}}); err != nil {
				t.Fatal(err)
			}
			got := &nsv1.NodePool{}
			if err := h.Direct.Get(ctx, types.NamespacedName{Name: pool.Name}, got); err != nil {
				t.Fatal(err)
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionReady)
			if ready == nil || ready.Status != tt.wantReady || ready.Reason != tt.wantReason {
				t.Fatalf("Ready = %+v, want %s %s", ready, tt.wantReady, tt.wantReason)
			}
			cpu := got.Status.Resources[corev1.ResourceCPU]
			if got.Status.Nodes != tt.wantNodes || cpu.Cmp(resource.MustParse(tt.wantCPU)) != 0 {
				t.Fatalf("status nodes %d cpu %s, want %d %s", got.Status.Nodes, cpu.String(), tt.wantNodes, tt.wantCPU)
			}
		})
	}
}

func ptr(s string) *string { return &s }
