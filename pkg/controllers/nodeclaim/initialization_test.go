package nodeclaim

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

func TestInitialization(t *testing.T) {
	startup := corev1.Taint{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name       string
		ready      corev1.ConditionStatus
		keepTaint  bool
		want       bool
		wantReason string
	}{
		{name: "node not ready", ready: corev1.ConditionFalse, wantReason: "NodeNotReady"},
		{name: "ready but the startup taint is still there", ready: corev1.ConditionTrue, keepTaint: true, wantReason: "NodeNotReady"},
		{name: "ready and startup taint removed", ready: corev1.ConditionTrue, want: true, wantReason: nsv1.ConditionInitialized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			claim := f.launched(t, "init", func(c *nsv1.NodeClaim) { c.Spec.StartupTaints = []corev1.Taint{startup} })
			node := createNode(t, controllertest.Node(uniq("node"), claim.Status.ProviderID, "2", nsv1.UnregisteredTaint))
			if _, err := f.reconcile(t, claim.Name); err != nil { // registers, adds the startup taint
				t.Fatal(err)
			}
			if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: node.Name}, node); err != nil {
				t.Fatal(err)
			}
			// Play the agent that removes its startup taint, and the node
			// lifecycle controller that removes the not-ready taint the
			// TaintNodesByCondition admission plugin adds.
			if !tt.keepTaint {
				kept := node.Spec.Taints[:0]
				for _, taint := range node.Spec.Taints {
					if taint.Key != startup.Key && taint.Key != corev1.TaintNodeNotReady {
						kept = append(kept, taint)
					}
				}
				node.Spec.Taints = kept
				if err := h.Direct.Update(context.Background(), node); err != nil {
					t.Fatal(err)
				}
			}
			h.SetNodeReady(t, node, tt.ready)
			if _, err := f.reconcile(t, claim.Name); err != nil {
				t.Fatal(err)
			}
			got := get(t, claim.Name)
			cond := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionInitialized)
			if cond == nil || cond.Reason != tt.wantReason || (cond.Status == "True") != tt.want {
				t.Fatalf("Initialized condition = %+v, want reason %s", cond, tt.wantReason)
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionReady)
			if (ready.Status == "True") != tt.want {
				t.Fatalf("Ready condition = %+v, want True only when initialized", ready)
			}
			n := &corev1.Node{}
			if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: node.Name}, n); err != nil {
				t.Fatal(err)
			}
			if (n.Labels[nsv1.LabelInitialized] == "true") != tt.want {
				t.Fatalf("node initialized label = %q, want it only when initialized", n.Labels[nsv1.LabelInitialized])
			}
			// Counted once each: registered on the first reconcile,
			// initialized when it initialized.
			pool := poolOf(got)
			wantInit := 0.0
			if tt.want {
				wantInit = 1
			}
			if r, i := testutil.ToFloat64(f.metrics.NodeClaimsRegistered.WithLabelValues(pool)), testutil.ToFloat64(f.metrics.NodeClaimsInitialized.WithLabelValues(pool)); r != 1 || i != wantInit {
				t.Errorf("registered_total %v, initialized_total %v; want 1 and %v", r, i, wantInit)
			}
		})
	}
}
