package provisioning

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// disrupting marks c Disrupting with status s (True or False).
func disrupting(c *nsv1.NodeClaim, s bool) *nsv1.NodeClaim {
	cond := metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionFalse, Reason: "NotDisrupting"}
	if s {
		cond = metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue, Reason: nsv1.DisruptingReasonSpotInterruption}
	}
	lifecycle.SetCondition(&c.Status.Conditions, cond, 1, metav1.NewTime(now))
	return c
}

func owned(kind string, p *corev1.Pod) *corev1.Pod {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: "o", UID: "o", Controller: ptr.To(true)}}
	return p
}

func withCPU(p *corev1.Pod, cpu string) *corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	return p
}

// disruptedSnapshot: claim "spot" (node "spot-node") is disrupted and runs
// a workload pod, a DaemonSet pod, a static pod, a finished pod and a
// terminating pod; claim "calm" (node "calm-node") is not, and claim
// "undisrupted" carries Disrupting=False.
func disruptedSnapshot() *Snapshot {
	spot := disrupting(claim("spot", "default", time.Hour), true)
	calm := claim("calm", "default", time.Hour)
	undisrupted := disrupting(claim("undisrupted", "default", time.Hour), false)
	finished := boundPod("finished", "spot-node")
	finished.Status.Phase = corev1.PodSucceeded
	terminating := deleted(boundPod("terminating", "spot-node"))
	pods := []*corev1.Pod{
		pendingPod("pending"),
		withCPU(owned("ReplicaSet", boundPod("web", "spot-node")), "1"),
		withCPU(boundPod("bare", "spot-node"), "500m"),
		owned("DaemonSet", boundPod("logs", "spot-node")),
		owned("Node", boundPod("static", "spot-node")),
		finished, terminating,
		owned("ReplicaSet", boundPod("calm-web", "calm-node")),
		owned("ReplicaSet", boundPod("other-web", "undisrupted-node")),
	}
	snap := &Snapshot{Pods: pods, NodeClaims: []*nsv1.NodeClaim{spot, calm, undisrupted},
		Nodes:       []*corev1.Node{node("spot-node"), node("calm-node"), node("undisrupted-node")},
		PodsByNode:  map[string][]*corev1.Pod{},
		ClaimByNode: map[string]*nsv1.NodeClaim{"spot-node": spot, "calm-node": calm, "undisrupted-node": undisrupted},
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			snap.PodsByNode[p.Spec.NodeName] = append(snap.PodsByNode[p.Spec.NodeName], p)
		}
	}
	return snap
}

func TestDisrupted(t *testing.T) {
	tests := []struct {
		name  string
		claim *nsv1.NodeClaim
		want  bool
	}{
		{"no claim", nil, false},
		{"no condition", claim("c", "default", time.Hour), false},
		{"Disrupting=False", disrupting(claim("c", "default", time.Hour), false), false},
		{"Disrupting=True", disrupting(claim("c", "default", time.Hour), true), true},
	}
	for _, tt := range tests {
		if got := Disrupted(tt.claim); got != tt.want {
			t.Errorf("%s: Disrupted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPendingPodsOfDisruptedNodes(t *testing.T) {
	tests := []struct {
		name       string
		nominated  map[string]string
		claims     []*nsv1.NodeClaim
		wantPods   []string
		wantHeld   map[string][]string
		wantLapsed []string
	}{
		{name: "pods still running on a disrupted node are the disruption executor's, not planned here",
			wantPods: []string{"pending"}},
		{name: "a pending pod nominated to a launching claim is held on it",
			claims: []*nsv1.NodeClaim{claim("replacement", "default", -1)}, nominated: map[string]string{"pending": "replacement"},
			wantHeld: map[string][]string{"replacement": {"pending"}}},
		{name: "a nomination onto the disrupted node lapses: it goes away",
			nominated: map[string]string{"pending": "spot-node"},
			wantPods:  []string{"pending"}, wantLapsed: []string{"pending"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := disruptedSnapshot()
			snap.NodeClaims = append(snap.NodeClaims, tt.claims...)
			got := PendingPods(snap, nominations(tt.nominated), now)
			if g := uids(got.Pods); !equal(g, tt.wantPods) {
				t.Errorf("Pods = %v, want %v", g, tt.wantPods)
			}
			if len(got.Held) != len(tt.wantHeld) {
				t.Errorf("Held = %v, want %v", got.Held, tt.wantHeld)
			}
			for target, want := range tt.wantHeld {
				if g := uids(got.Held[target]); !equal(g, want) {
					t.Errorf("Held[%s] = %v, want %v", target, g, want)
				}
			}
			var lapsed []string
			for _, u := range got.Lapsed {
				lapsed = append(lapsed, string(u))
			}
			if !equal(lapsed, tt.wantLapsed) {
				t.Errorf("Lapsed = %v, want %v", lapsed, tt.wantLapsed)
			}
		})
	}
}

func TestExistingNodesOfDisruptedClaims(t *testing.T) {
	snap := disruptedSnapshot()
	flying := disrupting(claim("flying", "default", -1), true)
	snap.NodeClaims = append(snap.NodeClaims, flying)
	got := map[string]*scheduling.ExistingNode{}
	for _, en := range ExistingNodes(snap, nil) {
		got[en.Name] = en
	}
	tests := []struct {
		node   string
		marked bool
		pods   []string
	}{
		{node: "spot-node", marked: true, pods: []string{"bare", "finished", "logs", "static", "terminating", "web"}},
		{node: "calm-node", pods: []string{"calm-web"}},
		{node: "undisrupted-node", pods: []string{"other-web"}},
		{node: "flying", marked: true},
	}
	for _, tt := range tests {
		en := got[tt.node]
		if en == nil {
			t.Fatalf("%s not listed", tt.node)
		}
		if en.MarkedForDeletion != tt.marked {
			t.Errorf("%s: MarkedForDeletion = %v, want %v", tt.node, en.MarkedForDeletion, tt.marked)
		}
		if g := uids(en.Pods); !equal(g, tt.pods) {
			t.Errorf("%s: pods = %v, want %v", tt.node, g, tt.pods)
		}
	}
}

// TestSolverKeepsOffDisruptedNode runs the rule through the real solver:
// the disrupted node has plenty of room left but gets no pod, and the pods
// still running on it are not planned (the disruption executor launches
// their replacements).
func TestSolverKeepsOffDisruptedNode(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var types []*catalog.InstanceType
	for _, name := range []string{"m5.large", "m5.xlarge", "c5.large"} {
		it, ok := cat.Get(name)
		if !ok {
			t.Fatalf("no %s in the catalog", name)
		}
		types = append(types, it)
	}
	snap := disruptedSnapshot()
	snap.NodePools = []*nsv1.NodePool{pool("default")}
	snap.Pods[0] = withCPU(snap.Pods[0], "100m") // "pending"
	pending := PendingPods(snap, noNominations, now)
	in, _ := BuildInput(snap, pending, map[string][]*catalog.InstanceType{"default": types}, scheduling.Options{MaxOptionsPerClaim: DefaultMaxOptionsPerClaim})
	plan, err := scheduling.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("unschedulable: %+v", plan.Unschedulable)
	}
	planned := map[string]bool{}
	for _, c := range plan.NewClaims {
		for _, p := range c.Pods {
			planned[p.Name] = true
		}
	}
	for _, n := range plan.Nominations {
		if n.Node == "spot-node" || n.Node == "spot" {
			t.Fatalf("pod %s nominated onto the disrupted node", n.Pod.Name)
		}
		planned[n.Pod.Name] = true
	}
	if !planned["pending"] || planned["web"] || planned["bare"] {
		t.Fatalf("planned %v, want the pending pod only", planned)
	}
}
