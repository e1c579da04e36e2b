package cost

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

func claim(name, pool, ct, it, price, node string) *nsv1.NodeClaim {
	c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nsv1.LabelNodePool: pool}}}
	c.Status.CapacityType, c.Status.InstanceType, c.Status.NodeName = ct, it, node
	c.Status.Price = price
	c.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	return c
}

func pod(ns, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns + cpu + mem}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSumGroupsAndOrders(t *testing.T) {
	b := Sum([]Item{
		{NodePool: "b", CapacityType: "spot", InstanceType: "m6g.large", PerHour: 0.03},
		{NodePool: "a", CapacityType: "spot", InstanceType: "c6g.large", PerHour: 0.02},
		{NodePool: "b", CapacityType: "spot", InstanceType: "m6g.large", PerHour: 0.04},
		{NodePool: "a", CapacityType: "on-demand", InstanceType: "c6g.large", PerHour: 0.068},
	})
	want := []Line{
		{"a", "on-demand", "c6g.large", 1, 0.068},
		{"a", "spot", "c6g.large", 1, 0.02},
		{"b", "spot", "m6g.large", 2, 0.07},
	}
	if len(b.Lines) != len(want) || b.Nodes != 4 || !near(b.PerHour, 0.158) {
		t.Fatalf("Sum = %+v", b)
	}
	for i, w := range want {
		g := b.Lines[i]
		if g.NodePool != w.NodePool || g.CapacityType != w.CapacityType || g.InstanceType != w.InstanceType || g.Nodes != w.Nodes || !near(g.PerHour, w.PerHour) {
			t.Errorf("line %d = %+v, want %+v", i, g, w)
		}
	}
	byCT := b.By(func(l Line) string { return l.CapacityType })
	if !near(byCT["spot"], 0.09) || !near(byCT["on-demand"], 0.068) {
		t.Errorf("by capacity type = %v", byCT)
	}
}

func TestClaimsSkipsDeletedAndUnpriced(t *testing.T) {
	gone := claim("gone", "a", "spot", "m5.large", "0.04", "")
	now := metav1.Now()
	gone.DeletionTimestamp = &now
	items := Claims([]*nsv1.NodeClaim{claim("ok", "a", "spot", "m5.large", "0.0342", ""), gone, claim("launching", "a", "", "", "", "")}, nil, nil)
	if len(items) != 1 || items[0] != (Item{NodePool: "a", CapacityType: "spot", InstanceType: "m5.large", PerHour: 0.0342}) {
		t.Fatalf("Claims = %+v, want only the live priced claim", items)
	}
}

func TestShare(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	finished := pod("done", "1", "4Gi")
	finished.Status.Phase = corev1.PodSucceeded
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		wantNS map[string]float64
		idle   float64
	}{
		{name: "empty node is idle", idle: 1},
		// a: cpu 1/2, memory 2/8 → weight 0.375; b: cpu 0.5/2, memory 4/8 → 0.375.
		{name: "by mean of cpu and memory fractions", pods: []*corev1.Pod{pod("a", "1", "2Gi"), pod("b", "500m", "4Gi")},
			wantNS: map[string]float64{"a": 0.375, "b": 0.375}, idle: 0.25},
		{name: "finished pods request nothing", pods: []*corev1.Pod{finished, pod("a", "2", "8Gi")}, wantNS: map[string]float64{"a": 1}},
		{name: "requests past allocatable are scaled to the node", pods: []*corev1.Pod{pod("a", "2", "8Gi"), pod("b", "2", "8Gi")},
			wantNS: map[string]float64{"a": 0.5, "b": 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Share(1, alloc, tt.pods)
			if len(s.ByNamespace) != len(tt.wantNS) || !near(s.Idle, tt.idle) {
				t.Fatalf("Share = %+v, want %v idle %v", s, tt.wantNS, tt.idle)
			}
			sum := s.Idle
			for ns, w := range tt.wantNS {
				if !near(s.ByNamespace[ns], w) {
					t.Errorf("%s = %v, want %v", ns, s.ByNamespace[ns], w)
				}
				sum += s.ByNamespace[ns]
			}
			if !near(sum, 1) {
				t.Errorf("shares add up to %v, want the price", sum)
			}
		})
	}
}

func TestFleet(t *testing.T) {
	reg := claim("reg", "a", "spot", "m5.large", "0.04", "node-1")
	fly := claim("fly", "a", "on-demand", "m5.large", "0.096", "")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}
	snap := &provisioning.Snapshot{NodeClaims: []*nsv1.NodeClaim{reg, fly}, Nodes: []*corev1.Node{node},
		PodsByNode: map[string][]*corev1.Pod{"node-1": {pod("web", "1", "4Gi")}}}
	b, s := Fleet(snap, nil)
	if b.Nodes != 2 || !near(b.PerHour, 0.136) {
		t.Errorf("breakdown = %+v", b)
	}
	// The node's own allocatable (1 cpu, 4Gi) is what the pod fills.
	if !near(s.ByNamespace["web"], 0.04) || !near(s.Idle, 0.096) {
		t.Errorf("shares = %+v, want web 0.04 and the launching claim idle", s)
	}
}
