package aws

import (
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/overlay"
)

// A NodeOverlay that makes m5.large the cheapest on-demand option changes
// the launch, not only the plan: wrapped as controllers.New wraps it, the
// provider orders the options by the overlaid prices, asks CreateFleet to
// follow that order (prioritized: EC2's lowest-price reads its list
// prices, under which c5.large is cheaper), and prices the claim so.
func TestOverlaidPricesChooseTheOnDemandLaunch(t *testing.T) {
	claim := func(name string) *nsv1.NodeClaim {
		return newClaim(name, reqIn(corev1.LabelInstanceTypeStable, "m5.large", "c5.large"), reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand))
	}
	// Without overlays EC2 takes the cheaper list price.
	plain := newEnv(t, envOpts{})
	c := plain.create(claim("plain"))
	if c.Status.InstanceType != "c5.large" {
		t.Fatalf("without an overlay launched %s, want c5.large (cheaper at list price)", c.Status.InstanceType)
	}

	e := newEnv(t, envOpts{})
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(&v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "m5-deal"},
		Spec: v1alpha1.NodeOverlaySpec{Price: ptr.To("0.01"), Requirements: []nsv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}}}}).Build()
	overlay.Wrap(e.p, kube)
	c = e.create(claim("overlaid"))
	if c.Status.InstanceType != "m5.large" || c.Status.Price != nsv1.FormatPrice(0.01) {
		t.Errorf("with the overlay launched %s at %q, want m5.large at the overlay's 0.01", c.Status.InstanceType, c.Status.Price)
	}
	calls := e.fleetCalls()
	in := calls[len(calls)-1]
	if in.OnDemandOptions == nil || in.OnDemandOptions.AllocationStrategy != ec2types.FleetOnDemandAllocationStrategyPrioritized {
		t.Fatalf("on-demand options %+v, want the prioritized strategy", in.OnDemandOptions)
	}
	prio := map[string]float64{}
	for _, cfg := range in.LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			prio[string(o.InstanceType)] = ptr.Deref(o.Priority, -1)
		}
	}
	if !(prio["m5.large"] < prio["c5.large"]) {
		t.Errorf("override priorities %v: m5.large should come first", prio)
	}
}
