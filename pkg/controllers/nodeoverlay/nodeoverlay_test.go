package nodeoverlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

func TestConditions(t *testing.T) {
	tests := []struct {
		name                  string
		err                   error
		conflicts             []string
		wantReady, wantConfl  metav1.ConditionStatus
		wantReason, wantInMsg string
	}{
		{"applied", nil, nil, metav1.ConditionTrue, metav1.ConditionFalse, ReasonNoConflict, ""},
		{"conflicting", nil, []string{"a", "b"}, metav1.ConditionTrue, metav1.ConditionTrue, ReasonConflicting, "a, b"},
		{"invalid", errors.New(`price adjustment "x"`), nil, metav1.ConditionFalse, metav1.ConditionFalse, ReasonInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conditions(tt.err, tt.conflicts)
			ready := meta.FindStatusCondition(got, v1alpha1.ConditionReady)
			confl := meta.FindStatusCondition(got, v1alpha1.ConditionConflicting)
			if ready == nil || confl == nil || ready.Status != tt.wantReady || confl.Status != tt.wantConfl || confl.Reason != tt.wantReason {
				t.Fatalf("conditions %+v", got)
			}
			if !strings.Contains(confl.Message, tt.wantInMsg) {
				t.Errorf("Conflicting message %q lacks %q", confl.Message, tt.wantInMsg)
			}
			if tt.err != nil && !strings.Contains(ready.Message, `"x"`) {
				t.Errorf("Ready message %q does not quote the bad value", ready.Message)
			}
		})
	}
}

// Two overlays of equal weight that both price on-demand offerings report
// Conflicting naming each other; a heavier one does not conflict.
func TestStatusReportsConflicts(t *testing.T) {
	ctx := context.Background()
	sfx := fmt.Sprint(time.Now().UnixNano() % 100000)
	pool := controllertest.NodePool("pool-" + sfx)
	if err := h.Direct.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	od := []nsv1.NodeSelectorRequirementWithMinValues{{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}
	mk := func(name string, weight int32, adj string) *v1alpha1.NodeOverlay {
		return &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + sfx},
			Spec: v1alpha1.NodeOverlaySpec{Requirements: od, PriceAdjustment: &adj, Weight: &weight}}
	}
	a, b, heavy := mk("a", 7, "-10%"), mk("b", 7, "+0.1"), mk("heavy", 9, "-1%")
	for _, o := range []*v1alpha1.NodeOverlay{a, b, heavy} {
		if err := h.Direct.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "us-east-1a"))
	c := New(h.Direct, cloud, clocktesting.NewFakeClock(time.Now()))
	// heavy decides every on-demand price, so a and b never meet: no conflict.
	want := map[string]metav1.ConditionStatus{a.Name: metav1.ConditionFalse, b.Name: metav1.ConditionFalse, heavy.Name: metav1.ConditionFalse}
	check := func(stage string) {
		for name, status := range want {
			if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
				t.Fatal(err)
			}
			got := &v1alpha1.NodeOverlay{}
			if err := h.Direct.Get(ctx, types.NamespacedName{Name: name}, got); err != nil {
				t.Fatal(err)
			}
			confl := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionConflicting)
			ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
			if confl == nil || confl.Status != status || ready == nil || ready.Status != metav1.ConditionTrue {
				t.Errorf("%s: %s conditions %+v, want Ready and Conflicting=%s", stage, name, got.Status.Conditions, status)
			}
		}
	}
	check("under a heavier overlay")
	if err := h.Direct.Delete(ctx, heavy); err != nil {
		t.Fatal(err)
	}
	delete(want, heavy.Name)
	want[a.Name], want[b.Name] = metav1.ConditionTrue, metav1.ConditionTrue
	check("equal weights on top")
	got := &v1alpha1.NodeOverlay{}
	if err := h.Direct.Get(ctx, types.NamespacedName{Name: a.Name}, got); err != nil {
		t.Fatal(err)
	}
	if msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionConflicting).Message; !strings.Contains(msg, b.Name) {
		t.Errorf("a's Conflicting message %q does not name %s", msg, b.Name)
	}
}
