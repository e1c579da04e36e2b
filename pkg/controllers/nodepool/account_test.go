package nodepool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

// TestPoolNamesTheMissingSpotRole: a claim whose spot launch EC2 refused for
// want of the Spot service-linked role turns the pool's CloudAccountReady
// False with the claim's message (the fix); the pool's Ready is not touched.
func TestPoolNamesTheMissingSpotRole(t *testing.T) {
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	pool := controllertest.NodePool("account-" + suffix)
	if err := h.Direct.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pool)
	claim := controllertest.NodeClaim(pool.Name+"-0", pool.Name)
	if err := h.Direct.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	fix := "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com"
	claim.Status.Conditions = []metav1.Condition{{Type: nsv1.ConditionLaunched, Status: metav1.ConditionFalse,
		Reason: nsv1.ReasonSpotServiceLinkedRoleMissing, Message: "AuthFailure.ServiceLinkedRoleCreationNotPermitted: " + fix, LastTransitionTime: metav1.Now()}}
	if err := h.Direct.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)
	c := New(h.Client, fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "us-east-1a")), clock.RealClock{}, controllertest.Metrics())
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: pool.Name}}); err != nil {
		t.Fatal(err)
	}
	got := &nsv1.NodePool{}
	if err := h.Direct.Get(ctx, types.NamespacedName{Name: pool.Name}, got); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionCloudAccountReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != nsv1.ReasonSpotServiceLinkedRoleMissing || !strings.Contains(cond.Message, fix) {
		t.Fatalf("CloudAccountReady %+v, want False naming the fix", cond)
	}
	if ready := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionReady); ready != nil && ready.Reason == nsv1.ReasonSpotServiceLinkedRoleMissing {
		t.Errorf("Ready %+v took the account's reason; it is decided by the node class and validation only", ready)
	}
}
