package emptiness

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

var seq int

// pool creates a pool with consolidateAfter 30s and the given budget, and
// n initialized claims with registered nodes; busy says which nodes run a
// workload pod.
func setup(t *testing.T, budget string, busy ...bool) (*nsv1.NodePool, []*nsv1.NodeClaim) {
	t.Helper()
	ctx := context.Background()
	seq++
	id := fmt.Sprintf("%d-%d", time.Now().UnixNano()%100000, seq)
	pool := controllertest.NodePool("empty-" + id)
	pool.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("30s")
	pool.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: budget}}
	if err := h.Direct.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pool)
	nsName := "empty-" + id
	if err := h.Direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName}}); err != nil {
		t.Fatal(err)
	}
	var claims []*nsv1.NodeClaim
	for i, b := range busy {
		node := controllertest.Node(fmt.Sprintf("%s-n%d", pool.Name, i), fmt.Sprintf("fake:///z/%s-%d", pool.Name, i), "2")
		if err := h.Direct.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		claim := controllertest.NodeClaim(fmt.Sprintf("%s-c%d", pool.Name, i), pool.Name)
		// Held by the finalizer as in production, so a deleted claim still
		// counts against the budget while it drains.
		claim.Finalizers = []string{nsv1.TerminationFinalizer}
		if err := h.Direct.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
		claim.Status.ProviderID, claim.Status.NodeName = node.Spec.ProviderID, node.Name
		lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.Now())
		if err := h.Direct.Status().Update(ctx, claim); err != nil {
			t.Fatal(err)
		}
		h.Cached(t, claim)
		if b {
			p := controllertest.Pod(nsName, fmt.Sprintf("w%d", i), "100m")
			p.Spec.NodeName = node.Name
			if err := h.Direct.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			h.Cached(t, p)
		}
		claims = append(claims, claim)
	}
	return pool, claims
}

func deleting(t *testing.T, c *nsv1.NodeClaim) bool {
	t.Helper()
	got := &nsv1.NodeClaim{}
	err := h.Direct.Get(context.Background(), client.ObjectKeyFromObject(c), got)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err != nil || !got.DeletionTimestamp.IsZero()
}

func reconcileAll(t *testing.T, c *Controller, claims []*nsv1.NodeClaim) {
	t.Helper()
	for _, cl := range claims {
		if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: cl.Name}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEmptiness(t *testing.T) {
	tests := []struct {
		name        string
		budget      string
		busy        []bool
		advance     time.Duration
		nominate    bool
		wantDeleted int
	}{
		{name: "busy nodes stay", budget: "100%", busy: []bool{true, true}, advance: time.Hour},
		{name: "empty nodes wait for consolidateAfter", budget: "100%", busy: []bool{false, false}, advance: 10 * time.Second},
		{name: "empty nodes go after consolidateAfter", budget: "100%", busy: []bool{false, false, true}, advance: time.Minute, wantDeleted: 2},
		{name: "the budget caps removals", budget: "1", busy: []bool{false, false, false}, advance: time.Minute, wantDeleted: 1},
		{name: "nodes with nominated pods stay", budget: "100%", busy: []bool{false}, advance: time.Minute, nominate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, claims := setup(t, tt.budget, tt.busy...)
			clk := clocktesting.NewFakeClock(time.Now())
			cluster := state.NewCluster(h.Client, clk, time.Hour)
			if tt.nominate {
				cluster.Nominate("pending-pod", claims[0].Name)
			}
			rec, _ := controllertest.Recorder(clk)
			c := New(h.Client, cluster, clk, rec, controllertest.Metrics())
			clk.Step(tt.advance)
			reconcileAll(t, c, claims)
			got := 0
			for _, cl := range claims {
				if deleting(t, cl) {
					got++
				}
			}
			if got != tt.wantDeleted {
				t.Fatalf("%d nodeclaims deleted, want %d", got, tt.wantDeleted)
			}
			for i, cl := range claims {
				if tt.busy[i] && deleting(t, cl) {
					t.Fatalf("busy nodeclaim %s was deleted", cl.Name)
				}
			}
		})
	}
}
