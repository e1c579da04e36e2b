package overlay

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/apis/v1alpha1"
	cloudfake "github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
)

// Every controller reads instance types through the wrapper: the
// cluster's overlays are applied (the heavier wins), the wrapped
// provider's shared types are left alone.
func TestInstanceTypesCarryTheOverlays(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	w := func(v int32) *int32 { return &v }
	str := func(v string) *string { return &v }
	od := []nsv1.NodeSelectorRequirementWithMinValues{{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "light"}, Spec: v1alpha1.NodeOverlaySpec{Requirements: od, Weight: w(1), PriceAdjustment: str("+1")}},
		&v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "heavy"}, Spec: v1alpha1.NodeOverlaySpec{Requirements: od, Weight: w(2), PriceAdjustment: str("-50%")}},
	).Build()
	cloud := cloudfake.New(cloudfake.InstanceType("m5.large", 2, 8, 0.096, "us-east-1a"))
	its, err := Wrap(cloud, kube).GetInstanceTypes(context.Background(), &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range its[0].Offerings {
		if o.CapacityType == nsv1.CapacityTypeOnDemand {
			found = true
			if o.Price != 0.048 || o.PricedBy != "heavy" {
				t.Errorf("on-demand offering %+v, want $0.048 priced by heavy", o)
			}
		}
	}
	if !found {
		t.Fatal("the fake type has no on-demand offering")
	}
	for _, o := range cloud.InstanceTypes[0].Offerings {
		if o.PricedBy != "" {
			t.Errorf("the wrapped provider's type was changed: %+v", o)
		}
	}
}
