package nodeclaim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

// launched creates a claim and launches it through the controller.
func (f *fixture) launched(t *testing.T, prefix string, mutate func(*nsv1.NodeClaim)) *nsv1.NodeClaim {
	t.Helper()
	claim := controllertest.NodeClaim(uniq(prefix), "pool-a")
	if mutate != nil {
		mutate(claim)
	}
	create(t, claim)
	if _, err := f.reconcile(t, claim.Name); err != nil {
		t.Fatalf("launching: %v", err)
	}
	return get(t, claim.Name)
}

func createNode(t *testing.T, node *corev1.Node) *corev1.Node {
	t.Helper()
	if err := h.Direct.Create(context.Background(), node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	h.Cached(t, node)
	return node
}

func TestRegistration(t *testing.T) {
	team := corev1.Taint{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	startup := corev1.Taint{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name           string
		withNode       bool
		wantRegistered bool
		wantReason     string
	}{
		{name: "no node yet", wantReason: "NodeNotFound"},
		{name: "node with the claim's providerID", withNode: true, wantRegistered: true, wantReason: nsv1.ConditionRegistered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			claim := f.launched(t, "reg", func(c *nsv1.NodeClaim) {
				c.Labels["team"] = "a"
				c.Spec.Taints = []corev1.Taint{team}
				c.Spec.StartupTaints = []corev1.Taint{startup}
			})
			var node *corev1.Node
			if tt.withNode {
				node = createNode(t, controllertest.Node(uniq("node"), claim.Status.ProviderID, "2", nsv1.UnregisteredTaint))
			}
			if _, err := f.reconcile(t, claim.Name); err != nil {
				t.Fatal(err)
			}
			got := get(t, claim.Name)
			cond := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionRegistered)
			if cond == nil || cond.Reason != tt.wantReason || (cond.Status == "True") != tt.wantRegistered {
				t.Fatalf("Registered condition = %+v, want reason %s", cond, tt.wantReason)
			}
			if !tt.wantRegistered {
				return
			}
			if got.Status.NodeName != node.Name {
				t.Fatalf("status.nodeName = %q, want %q", got.Status.NodeName, node.Name)
			}
			n := &corev1.Node{}
			if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: node.Name}, n); err != nil {
				t.Fatal(err)
			}
			if !hasNodeFinalizer(n) {
				t.Errorf("node has no termination finalizer")
			}
			for k, v := range map[string]string{"team": "a", nsv1.LabelNodePool: "pool-a", nsv1.LabelRegistered: "true",
				nsv1.LabelNodeClaim: claim.Name, corev1.LabelInstanceTypeStable: got.Status.InstanceType} {
				if n.Labels[k] != v {
					t.Errorf("node label %s = %q, want %q", k, n.Labels[k], v)
				}
			}
			want := map[string]bool{"team": true, "agent-not-ready": true}
			for _, taint := range n.Spec.Taints {
				if taint.MatchTaint(&nsv1.UnregisteredTaint) {
					t.Errorf("the unregistered taint is still on the node")
				}
				delete(want, taint.Key)
			}
			if len(want) > 0 {
				t.Errorf("node taints %v lack %v", n.Spec.Taints, want)
			}
		})
	}
}

func hasNodeFinalizer(n *corev1.Node) bool {
	for _, f := range n.Finalizers {
		if f == nsv1.TerminationFinalizer {
			return true
		}
	}
	return false
}

// The pool template's annotations reach the Node (Karpenter syncs them;
// a template do-not-disrupt must hold on the node the planner reads), while
// Nodesmith's bookkeeping annotations stay on the claim.
func TestSyncNodeCopiesTemplateAnnotations(t *testing.T) {
	claim := controllertest.NodeClaim("c", "pool-a")
	claim.Annotations = map[string]string{
		"example.com/team":                   "payments",
		nsv1.AnnotationDoNotDisrupt:          "true",
		nsv1.AnnotationNodePoolHash:          "123",
		nsv1.AnnotationDisruptionCommand:     "d-abc",
		"aws.nodesmith.sh/ec2nodeclass-hash": "456",
		"nodesmith.sh.example.com/not-ours":  "kept",
	}
	node := &corev1.Node{}
	node.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0"}
	SyncNode(claim, node)
	want := map[string]string{"node.alpha.kubernetes.io/ttl": "0", "example.com/team": "payments",
		nsv1.AnnotationDoNotDisrupt: "true", "nodesmith.sh.example.com/not-ours": "kept"}
	if len(node.Annotations) != len(want) {
		t.Errorf("node annotations %v, want %v", node.Annotations, want)
	}
	for k, v := range want {
		if node.Annotations[k] != v {
			t.Errorf("node annotation %s = %q, want %q (all: %v)", k, node.Annotations[k], v, node.Annotations)
		}
	}
}
