package nodeclaim

import (
	"context"
	"fmt"
	"sort"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// TestGoingAwayReleasesNominations: pods nominated onto a claim (or its
// node) that an interruption or a disruption marks, that is deleted, or
// that is gone, are handed back to the provisioner at once instead of
// waiting out their nominations on capacity that will not run them.
func TestGoingAwayReleasesNominations(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, claim *nsv1.NodeClaim)
	}{
		{"marked Disrupting", func(t *testing.T, claim *nsv1.NodeClaim) {
			lifecycle.SetCondition(&claim.Status.Conditions, metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue,
				Reason: nsv1.DisruptingReasonSpotInterruption, Message: "test"}, claim.Generation, metav1.Now())
			if err := h.Direct.Status().Update(context.Background(), claim); err != nil {
				t.Fatal(err)
			}
			h.Cached(t, claim)
		}},
		{"deleted", func(t *testing.T, claim *nsv1.NodeClaim) {
			claim.Finalizers = []string{nsv1.TerminationFinalizer}
			if err := h.Direct.Update(context.Background(), claim); err != nil {
				t.Fatal(err)
			}
			if err := h.Direct.Delete(context.Background(), claim); err != nil {
				t.Fatal(err)
			}
			h.Cached(t, get(t, claim.Name))
		}},
		{"gone", func(t *testing.T, claim *nsv1.NodeClaim) {
			if err := h.Direct.Delete(context.Background(), claim); err != nil {
				t.Fatal(err)
			}
			controllertest.Eventually(t, "cache sees the claim gone", func() error {
				err := h.Client.Get(context.Background(), types.NamespacedName{Name: claim.Name}, &nsv1.NodeClaim{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				if err != nil {
					return err
				}
				return fmt.Errorf("still cached")
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			claim := create(t, controllertest.NodeClaim(uniq("going"), "default"))
			claim.Status.NodeName = claim.Name + "-node"
			if err := h.Direct.Status().Update(context.Background(), claim); err != nil {
				t.Fatal(err)
			}
			h.Cached(t, claim)
			f.cluster.Nominate("on-claim", claim.Name)
			f.cluster.Nominate("on-node", claim.Status.NodeName)
			f.cluster.Nominate("elsewhere", "other-claim")
			tt.change(t, claim)
			if _, err := f.reconcile(t, claim.Name); err != nil {
				t.Fatal(err)
			}
			want := []types.UID{"on-claim", "on-node"}
			if tt.name == "gone" {
				// The claim's node name went with it: only the claim's
				// own nominations are known to be released.
				want = []types.UID{"on-claim"}
			}
			got := append([]types.UID(nil), f.replayed...)
			sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
			if len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) || (len(want) > 1 && got[1] != want[1]) {
				t.Fatalf("replanned %v, want %v", got, want)
			}
			for _, uid := range want {
				if target, _, ok := f.cluster.Nominated(uid); ok {
					t.Errorf("pod %s still nominated to %s", uid, target)
				}
			}
			if target, _, ok := f.cluster.Nominated("elsewhere"); !ok || target != "other-claim" {
				t.Errorf("a nomination elsewhere was released (%q, %v)", target, ok)
			}
		})
	}
}
