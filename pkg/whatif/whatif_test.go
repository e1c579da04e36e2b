package whatif

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func nodePool(name string, reqs ...nsv1.NodeSelectorRequirementWithMinValues) nsv1.NodePool {
	np := nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = reqs
	return np
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) nsv1.NodeSelectorRequirementWithMinValues {
	return nsv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func nodeClass() awsv1.EC2NodeClass {
	return awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: ptr.To("role"),
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"a": "b"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"a": "b"}}},
	}}
}

func pendingPod(name, cpu, mem string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: apitypes.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	return p
}

func boundPod(name, node, cpu, mem string) corev1.Pod {
	p := pendingPod(name, cpu, mem)
	p.Spec.NodeName = node
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	return p
}

// nodesmithNode is a registered, initialized claim of pool default and its node.
func nodesmithNode(name, it, ct, zone, price string, cpu, mem string) (nsv1.NodeClaim, corev1.Node) {
	c := nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name + "-claim", Labels: map[string]string{nsv1.LabelNodePool: "default"},
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	c.Spec.NodeClassRef = &nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	c.Status = nsv1.NodeClaimStatus{NodeName: name, InstanceType: it, CapacityType: ct, Zone: zone, Price: price,
		ProviderID: "aws:///" + zone + "/i-" + name}
	lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(now.Add(-50*time.Minute)))
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelInstanceTypeStable: it, corev1.LabelTopologyZone: zone, nsv1.LabelCapacityType: ct, nsv1.LabelNodePool: "default",
		corev1.LabelHostname: name}},
		Spec: corev1.NodeSpec{ProviderID: c.Status.ProviderID},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("29")}}}
	return c, n
}

func baseSnapshot() *Snapshot {
	c1, n1 := nodesmithNode("node-a", "m6g.large", "spot", "us-east-1a", "0.0342", "1930m", "6Gi")
	c2, n2 := nodesmithNode("node-b", "c6g.xlarge", "on-demand", "us-east-1b", "0.136", "3920m", "6Gi")
	ds := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "proxy"}}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "p", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}
	s := &Snapshot{APIVersion: SnapshotAPIVersion, Kind: SnapshotKind, TakenAt: metav1.NewTime(now),
		NodePools:      []nsv1.NodePool{nodePool("default", req(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, "spot", "on-demand"))},
		EC2NodeClasses: []awsv1.EC2NodeClass{nodeClass()},
		NodeClaims:     []nsv1.NodeClaim{c1, c2}, Nodes: []corev1.Node{n1, n2}, DaemonSets: []appsv1.DaemonSet{ds},
	}
	for i, n := range []string{"node-a", "node-a", "node-b", "node-b", "node-b"} {
		s.Pods = append(s.Pods, boundPod("web-"+string(rune('0'+i)), n, "500m", "1Gi"))
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPlanRepack(t *testing.T) {
	s := baseSnapshot()
	r, err := Plan(s, ModeRepack, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pods != 5 || len(r.Unschedulable) != 0 || r.Nominated != 0 || r.New.Nodes == 0 {
		t.Fatalf("plan = %+v, want the 5 web pods on new nodes", r)
	}
	if r.LowerBound <= 0 || r.LowerBound > r.New.PerHour+1e-9 {
		t.Errorf("lower bound %v against the plan's %v", r.LowerBound, r.New.PerHour)
	}
	// Each node at what it costs now (cost.Prices): the spot node at the
	// catalog's spot price, not the 0.0342 it launched at.
	if want := catalogPrice(t, "m6g.large", "us-east-1a", "spot") + catalogPrice(t, "c6g.xlarge", "us-east-1b", "on-demand"); !near(r.Nodesmith.PerHour, want) ||
		near(want, 0.0342+0.136) || r.Nodesmith.Nodes != 2 || r.Other.Nodes != 0 {
		t.Errorf("current = %+v / %+v, want the two nodes at their offerings' prices, %v", r.Nodesmith, r.Other, want)
	}
	placed := 0
	for _, c := range r.Claims {
		placed += c.Pods
		if c.Options == 0 || c.PerHour <= 0 {
			t.Errorf("claim %+v has no priced option", c)
		}
	}
	if placed != 5 {
		t.Errorf("claims hold %d pods, want 5", placed)
	}
}

func TestPlanPending(t *testing.T) {
	s := baseSnapshot()
	s.Pods = append(s.Pods, pendingPod("fits", "500m", "1Gi"), pendingPod("huge", "5000", "1Gi"))
	r, err := Plan(s, ModePending, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pods != 2 || r.Nominated != 1 || len(r.Unschedulable) != 1 || r.Unschedulable[0].Pod != "default/huge" || r.New.Nodes != 0 {
		t.Fatalf("plan = %+v, want fits nominated to a node with room and huge unschedulable", r)
	}
	if !strings.Contains(r.Unschedulable[0].Reason, "needs 5e+03 cpu") {
		t.Errorf("reason = %q", r.Unschedulable[0].Reason)
	}
}

func TestPlanPricesOtherNodesFromTheCatalog(t *testing.T) {
	specs, err := catalog.Specs()
	if err != nil {
		t.Fatal(err)
	}
	var od float64
	for _, sp := range specs {
		if sp.Name == "m5.large" {
			od = sp.OnDemandPrice
		}
	}
	s := baseSnapshot()
	s.Nodes = append(s.Nodes,
		corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "karpenter-node", Labels: map[string]string{
			corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-east-1a",
			"karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "general"}}},
		corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mystery", Labels: map[string]string{corev1.LabelInstanceTypeStable: "x9.huge"}}})
	r, err := Plan(s, ModeRepack, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Other.Lines) != 1 || r.Other.Lines[0].NodePool != "karpenter:general" || !near(r.Other.PerHour, od) {
		t.Errorf("other = %+v, want m5.large on demand at %v", r.Other, od)
	}
	if len(r.Unpriced) != 1 || r.Unpriced[0] != "mystery" {
		t.Errorf("unpriced = %v", r.Unpriced)
	}
	if !near(r.Current(), r.Nodesmith.PerHour+od) {
		t.Errorf("current = %v", r.Current())
	}
}

func TestPlanLeavesOutPoolsItCannotUse(t *testing.T) {
	s := baseSnapshot()
	orphan := nodePool("orphan")
	orphan.Spec.Template.Spec.NodeClassRef.Name = "missing"
	unready := nodePool("unready")
	unready.Status.Conditions = []metav1.Condition{{Type: nsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "NodeClassNotReady", Message: "no subnets"}}
	s.NodePools = append(s.NodePools, orphan, unready)
	r, err := Plan(s, ModeRepack, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []PoolNote{{"orphan", "EC2NodeClass missing is not in the snapshot"}, {"unready", "not Ready: NodeClassNotReady no subnets"}}
	if len(r.LeftOut) != 2 || r.LeftOut[0] != want[0] || r.LeftOut[1] != want[1] {
		t.Errorf("left out = %+v, want %+v", r.LeftOut, want)
	}
}

func TestUnavailableOfferingsAndNodeClassZones(t *testing.T) {
	s := baseSnapshot()
	s.NodePools = []nsv1.NodePool{nodePool("default", req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m6g.large"))}
	s.EC2NodeClasses[0].Status.Subnets = []awsv1.Subnet{{ID: "subnet-1", Zone: "us-east-1c"}, {ID: "subnet-2", Zone: "us-east-1c"}}
	s.UnavailableOfferings = []Offering{{InstanceType: "m6g.large", CapacityType: "spot"}}
	s.Pods, s.Nodes, s.NodeClaims = []corev1.Pod{pendingPod("p", "500m", "1Gi")}, nil, nil
	r, err := ExplainPod(s, "default", "p", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Claim == nil || r.Claim.CapacityType != "on-demand" || r.Claim.Zone != "us-east-1c" {
		t.Errorf("claim = %+v, want on-demand (spot marked unavailable) in the class's only zone; report %+v", r.Claim, r)
	}
}

func TestReplaceNodePoolsWithKarpenterManifests(t *testing.T) {
	s := baseSnapshot()
	f, err := os.Open("../convert/testdata/karpenter-v1beta1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	warnings, err := ReplaceNodePools(s, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.NodePools) != 1 || s.NodePools[0].Name != "default" || len(s.NodePools[0].Spec.Template.Spec.Requirements) != 3 ||
		len(s.EC2NodeClasses) != 1 || s.EC2NodeClasses[0].Spec.Role == nil || *s.EC2NodeClasses[0].Spec.Role != "KarpenterNodeRole-my-cluster" {
		t.Fatalf("pools %+v classes %+v", s.NodePools, s.EC2NodeClasses)
	}
	// The converter's three: the hop limit written out, expireAfter
	// becoming forceful, and Karpenter's node role kept.
	if len(warnings) != 3 {
		t.Errorf("warnings = %v, want the converter's three", warnings)
	}
	r, err := Plan(s, ModeRepack, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Claims {
		if c.CapacityType != "spot" || !strings.HasPrefix(c.InstanceType, "c5") && !strings.HasPrefix(c.InstanceType, "c6g") &&
			!strings.HasPrefix(c.InstanceType, "m5") && !strings.HasPrefix(c.InstanceType, "m6g") &&
			!strings.HasPrefix(c.InstanceType, "r5") && !strings.HasPrefix(c.InstanceType, "r6g") {
			t.Errorf("claim %+v is outside the converted pool's families or capacity type", c)
		}
	}
	nodesmith := strings.NewReader("apiVersion: nodesmith.sh/v1\nkind: NodePool\nmetadata: {name: mine}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: aws.nodesmith.sh, kind: EC2NodeClass, name: default}\n  disruption: {consolidateAfter: 30s}\n")
	warnings, err = ReplaceNodePools(s, nodesmith)
	if err != nil || len(warnings) != 0 || s.NodePools[0].Name != "mine" || *s.NodePools[0].Spec.Disruption.ConsolidateAfter.Duration != 30*time.Second {
		t.Errorf("nodesmith pools: %v, %v, %+v", err, warnings, s.NodePools)
	}
	if _, err := ReplaceNodePools(s, strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")); err == nil {
		t.Error("a ConfigMap was taken for node pools")
	}
}

func TestReadSnapshot(t *testing.T) {
	b, err := yaml.Marshal(baseSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadSnapshot(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 5 || len(s.NodeClaims) != 2 || !s.TakenAt.Equal(&metav1.Time{Time: now}) {
		t.Errorf("read back %+v", s)
	}
	if _, err := ReadSnapshot(strings.NewReader("apiVersion: v1\nkind: List\n")); err == nil || !strings.Contains(err.Error(), "not a snapshot") {
		t.Errorf("error = %v", err)
	}
}

func TestExplainNode(t *testing.T) {
	empty := func(s *Snapshot) { s.Pods = s.Pods[2:] } // node-a's two pods gone
	tests := []struct {
		name    string
		mutate  func(*Snapshot)
		node    string
		method  string // the planner's action, or "" when it skips the node
		skip    string
		reason  string
		managed bool
	}{
		// node-a's two pods fit in node-b's room: deleting node-a saves its price.
		{name: "under-used", node: "node-a", managed: true, method: "SingleNodeConsolidation", reason: "their 2 pods fit on other nodes"},
		{name: "too big to consolidate", node: "node-b", managed: true, skip: "NoCheaperReplacement", reason: "would need 2 new nodes"},
		{name: "empty past consolidateAfter", node: "node-a", mutate: empty, managed: true, method: "Emptiness", reason: "has run no workload pods"},
		{name: "empty but the budget allows nothing", node: "node-a", managed: true, skip: "Budget", reason: "allows no more nodes now",
			mutate: func(s *Snapshot) { empty(s); s.NodePools[0].Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "0"}} }},
		{name: "empty but the pool never consolidates", node: "node-a", managed: true, skip: "ConsolidationDisabled", reason: "consolidateAfter is Never",
			mutate: func(s *Snapshot) {
				empty(s)
				s.NodePools[0].Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("Never")
			}},
		{name: "busy under WhenEmpty", node: "node-a", managed: true, skip: "PolicyWhenEmpty", reason: "runs 2 pods",
			mutate: func(s *Snapshot) {
				s.NodePools[0].Spec.Disruption.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmpty
			}},
		// A chunk of 1700m/4Gi fits only in node-a's room: node-a is not
		// empty, and a repack carries the chunk as a fourth pod.
		{name: "empty but holding a capacity buffer's room", node: "node-a", managed: true, method: "MultiNodeConsolidation", reason: "for their 4 pods",
			mutate: func(s *Snapshot) {
				empty(s)
				withBuffer(s, 1)
				s.NodePools[0].Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "100%"}}
			}},
		{name: "not ours", node: "other", mutate: func(s *Snapshot) {
			s.Nodes = append(s.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSnapshot()
			if tt.mutate != nil {
				tt.mutate(s)
			}
			r, err := ExplainNode(s, tt.node, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Managed != tt.managed {
				t.Fatalf("managed = %v", r.Managed)
			}
			if !tt.managed {
				if len(r.Checks) != 0 || len(r.Notes) == 0 {
					t.Errorf("report = %+v", r)
				}
				return
			}
			c := r.Checks[0]
			if c.Method != tt.method || c.Skip != tt.skip || c.Candidate != (tt.method != "") || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("check = %+v, want method %q, skip %q, reason %q", c, tt.method, tt.skip, tt.reason)
			}
			if c.Candidate && (c.Savings <= 0 || c.Allowed == nil) {
				t.Errorf("candidate check = %+v, want its savings and the budget's allowance", c)
			}
			if r.PoolNodes != 2 || len(r.Budgets) == 0 || !r.Budgets[0].Active {
				t.Errorf("budgets = %+v over %d nodes", r.Budgets, r.PoolNodes)
			}
		})
	}
}

func TestBudgetWindows(t *testing.T) {
	sched := func(cron string, d time.Duration) nsv1.Budget {
		return nsv1.Budget{Nodes: "0", Schedule: ptr.To(cron), Duration: &metav1.Duration{Duration: d}}
	}
	got := budgets([]nsv1.Budget{{Nodes: "50%"}, sched("0 9 * * *", 8*time.Hour), sched("0 20 * * *", time.Hour)}, 4, now) // 12:00 UTC
	if !got[0].Active || got[0].Allows != 2 || !got[1].Active || got[1].Allows != 0 || got[2].Active {
		t.Errorf("budgets = %+v", got)
	}
}

// TestExplainNodeRepair: an unhealthy node gets a note saying since when
// and when repair replaces it; with the gate (--node-repair) the verdict
// is the planner's forced Repair, before its toleration it is not.
func TestExplainNodeRepair(t *testing.T) {
	notReady := func(ago time.Duration) func(*Snapshot) {
		return func(s *Snapshot) {
			s.Nodes[0].Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
				LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
		}
	}
	tests := []struct {
		name     string
		mutate   func(*Snapshot)
		gate     bool
		method   string
		note     string
		wantNote bool
	}{
		{name: "healthy: no note", method: "SingleNodeConsolidation"},
		// A NotReady node uses up the pool's 10 % (1 of 2): nothing
		// voluntary moves it.
		{name: "past its toleration without the gate: a note, no repair", mutate: notReady(40 * time.Minute),
			wantNote: true, note: "Ready=Unknown for 40m0s (since 2026-12-01T11:20:00Z; toleration 30m0s); node repair replaces it now, unless more than 20% of its pool's nodes are unhealthy (only with the NodeRepair feature gate"},
		{name: "past its toleration with the gate: repaired", mutate: notReady(40 * time.Minute), gate: true, method: "Repair",
			wantNote: true, note: "node repair replaces it now"},
		{name: "before its toleration: the note says when", mutate: notReady(10 * time.Minute), gate: true,
			wantNote: true, note: "node repair replaces it at 2026-12-01T12:20:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSnapshot()
			if tt.mutate != nil {
				tt.mutate(s)
			}
			r, err := ExplainNode(s, "node-a", Options{NodeRepair: tt.gate})
			if err != nil {
				t.Fatal(err)
			}
			if c := r.Checks[0]; c.Method != tt.method || (tt.method == "Repair" && !c.Forced) {
				t.Errorf("check = %+v, want method %s (forced for a repair)", c, tt.method)
			}
			found := false
			for _, n := range r.Notes {
				if strings.Contains(n, "unhealthy:") {
					found = true
					if !strings.Contains(n, tt.note) {
						t.Errorf("note %q does not contain %q", n, tt.note)
					}
				}
			}
			if found != tt.wantNote {
				t.Errorf("repair note present %v, want %v: %v", found, tt.wantNote, r.Notes)
			}
		})
	}
}

// withBuffer adds a CapacityBuffer of n chunks of 1700m/4Gi.
func withBuffer(s *Snapshot, n int32) {
	tmpl := corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "chunk"}}
	tmpl.Template.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1700m"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}}
	s.PodTemplates = append(s.PodTemplates, tmpl)
	s.CapacityBuffers = append(s.CapacityBuffers, cbv1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "warm"},
		Spec: cbv1.CapacityBufferSpec{PodTemplateRef: &cbv1.LocalObjectRef{Name: "chunk"}, Replicas: &n}})
}

// plan --pending keeps a capacity buffer's room as the provisioner does:
// after the pods, on new nodes when the existing ones have none.
func TestPlanPendingKeepsBufferRoom(t *testing.T) {
	s := baseSnapshot()
	withBuffer(s, 2)
	s.CapacityBuffers = append(s.CapacityBuffers, cbv1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "scaled"},
		Spec: cbv1.CapacityBufferSpec{ScalableRef: &cbv1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"}, Replicas: ptrTo[int32](1)}})
	r, err := Plan(s, ModePending, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.BufferPods != 2 || r.New.Nodes == 0 {
		t.Fatalf("plan = %+v, want room for the 2 chunks on new nodes", r)
	}
	if len(r.BufferNotes) != 1 || !strings.Contains(r.BufferNotes[0], "default/scaled") {
		t.Errorf("buffer notes %v, want the scalableRef buffer named", r.BufferNotes)
	}
}

func ptrTo[T any](v T) *T { return &v }

// explain pod sees the node class's capacity reservations as the
// controller does: a pod that fits the reserved type goes there, at $0/h,
// while the reservation in the class's status has an instance free.
func TestExplainPodUsesTheClassReservations(t *testing.T) {
	for _, tt := range []struct {
		name  string
		avail int64
		want  string
	}{{"one free", 1, nsv1.CapacityTypeReserved}, {"used up", 0, nsv1.CapacityTypeSpot}} {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSnapshot()
			s.NodePools = []nsv1.NodePool{nodePool("default", req(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, "spot", "on-demand", "reserved"))}
			s.EC2NodeClasses[0].Status.Subnets = []awsv1.Subnet{{ID: "subnet-1", Zone: "us-east-1a"}}
			s.EC2NodeClasses[0].Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-0123", ReservationType: "default",
				InstanceType: "m6i.xlarge", AvailabilityZone: "us-east-1a", AvailableInstanceCount: tt.avail}}
			s.Pods, s.Nodes, s.NodeClaims = []corev1.Pod{pendingPod("p", "3", "4Gi")}, nil, nil
			r, err := ExplainPod(s, "default", "p", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Claim == nil || r.Claim.CapacityType != tt.want {
				t.Fatalf("claim = %+v, want %s", r.Claim, tt.want)
			}
			if tt.want == nsv1.CapacityTypeReserved && (r.Claim.InstanceType != "m6i.xlarge" || r.Claim.PerHour != 0) {
				t.Errorf("reserved claim %+v, want m6i.xlarge at $0/h", r.Claim)
			}
		})
	}
}

// explain pod reads NodeOverlay prices as the controller does: an overlay
// that makes spot dearer than on-demand turns the claim to on-demand, and
// the claim names the overlay that priced it.
func TestExplainPodReadsNodeOverlayPrices(t *testing.T) {
	for _, tt := range []struct {
		name     string
		overlays []nsv1alpha1.NodeOverlay
		wantCT   string
		wantBy   string
	}{
		{"no overlay", nil, nsv1.CapacityTypeSpot, ""},
		{"spot made dear, on-demand discounted", []nsv1alpha1.NodeOverlay{
			{ObjectMeta: metav1.ObjectMeta{Name: "spot-tax"}, Spec: nsv1alpha1.NodeOverlaySpec{
				Requirements:    []nsv1.NodeSelectorRequirementWithMinValues{{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}},
				PriceAdjustment: ptrTo("+10")}},
			{ObjectMeta: metav1.ObjectMeta{Name: "od-discount"}, Spec: nsv1alpha1.NodeOverlaySpec{
				Requirements:    []nsv1.NodeSelectorRequirementWithMinValues{{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
				PriceAdjustment: ptrTo("-50%")}},
		}, nsv1.CapacityTypeOnDemand, "od-discount"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSnapshot()
			s.NodePools = []nsv1.NodePool{nodePool("default", req(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, "spot", "on-demand"))}
			s.NodeOverlays = tt.overlays
			s.Pods, s.Nodes, s.NodeClaims = []corev1.Pod{pendingPod("p", "3", "4Gi")}, nil, nil
			r, err := ExplainPod(s, "default", "p", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Claim == nil || r.Claim.CapacityType != tt.wantCT || r.Claim.PricedBy != tt.wantBy {
				t.Fatalf("claim = %+v, want %s priced by %q", r.Claim, tt.wantCT, tt.wantBy)
			}
		})
	}
}

// plan reads the snapshot's commitments as the controller does: a Compute
// Savings Plan larger than the repack turns its spot claims to on-demand,
// all prepaid, and the comparison shows the plan solved ignoring it
// (spot, of which the commitment covers nothing) adding more.
func TestPlanShowsCostWithAndWithoutCommitments(t *testing.T) {
	s := baseSnapshot()
	s.NodePools = []nsv1.NodePool{nodePool("default", req(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, "spot", "on-demand"))}
	plain, err := Plan(s, ModeRepack, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Commitments != nil {
		t.Fatalf("no commitment, yet a comparison %+v", plain.Commitments)
	}
	for _, c := range plain.Claims {
		if c.CapacityType != nsv1.CapacityTypeSpot {
			t.Fatalf("without commitments claim %+v, want spot", c)
		}
	}
	s.Commitments = []nsv1alpha1.Commitment{{ObjectMeta: metav1.ObjectMeta{Name: "sp"},
		Spec: nsv1alpha1.CommitmentSpec{Type: nsv1alpha1.CommitmentComputeSavingsPlan, HourlyCommitment: "50"}}}
	r, err := Plan(s, ModeRepack, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Claims {
		if c.CapacityType != nsv1.CapacityTypeOnDemand {
			t.Errorf("under a $50/h Savings Plan claim %+v, want on-demand", c)
		}
	}
	c := r.Commitments
	if c == nil {
		t.Fatal("no commitment comparison")
	}
	if !near(c.CoveredPerHour, c.ListPerHour) || c.AddedPerHour > 1e-9 {
		t.Errorf("with: %+v, want all of the on-demand covered", c)
	}
	if c.IgnoringCoveredPerHour != 0 || !near(c.IgnoringListPerHour, plain.New.PerHour) || c.IgnoringAddedPerHour <= c.AddedPerHour {
		t.Errorf("ignoring: %+v, want the spot plan (%.4f/h) with nothing covered", c, plain.New.PerHour)
	}
}

// catalogPrice is the embedded catalog's price of an offering.
func catalogPrice(t *testing.T, it, zone, ct string) float64 {
	t.Helper()
	specs, err := catalog.Specs()
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range catalog.FromSpecs(specs, catalog.Options{Region: "us-east-1", Zones: []string{zone}}).Types() {
		if typ.Name != it {
			continue
		}
		if o, ok := typ.Offerings.Get(zone, ct); ok {
			return o.Price
		}
	}
	t.Fatalf("the catalog has no %s %s in %s", ct, it, zone)
	return 0
}
