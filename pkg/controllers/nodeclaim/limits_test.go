package nodeclaim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

// TestLaunchKeepsPoolLimits: a claim of a pool that limits cpu launches
// only as an option that fits what the pool's launched claims leave, even
// when a larger option is the one the cloud would pick (the cheaper one is
// out of capacity), and is refused, without a Create, when no option fits.
func TestLaunchKeepsPoolLimits(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		cheapICE    bool // xlarge has no capacity: the cloud would pick 4xlarge
		options     []string
		wantType    string // "" when the claim must be deleted
		wantCreates int
	}{
		{name: "the fitting option launches", options: []string{"m5.xlarge", "m5.4xlarge"}, wantType: "m5.xlarge", wantCreates: 2},
		{name: "a fallback past the limit is not launched", cheapICE: true, options: []string{"m5.xlarge", "m5.4xlarge"}, wantCreates: 2},
		{name: "no option fits: refused before any Create", options: []string{"m5.4xlarge"}, wantCreates: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			xl := fake.InstanceType("m5.xlarge", 4, 16, 0.192, "zone-a")
			if tt.cheapICE {
				for i := range xl.Offerings {
					xl.Offerings[i].Available = false
				}
			}
			f.cloud.InstanceTypes = []*catalog.InstanceType{xl, fake.InstanceType("m5.4xlarge", 16, 64, 0.768, "zone-a")}
			pool := controllertest.NodePool(uniq("limited"))
			pool.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("8")}
			if err := h.Direct.Create(ctx, pool); err != nil {
				t.Fatal(err)
			}
			h.Cached(t, pool)

			first := controllertest.NodeClaim(uniq("first"), pool.Name)
			first.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.4xlarge", "m5.xlarge"}}}
			f.cloud.InstanceTypes[0].Offerings[0].Available = true // the first claim launches as m5.xlarge
			create(t, first)
			if _, err := f.reconcile(t, first.Name); err != nil {
				t.Fatal(err)
			}
			if got := get(t, first.Name); got.Status.InstanceType != "m5.xlarge" {
				t.Fatalf("first claim launched as %q, want m5.xlarge", got.Status.InstanceType)
			}
			if tt.cheapICE {
				for i := range xl.Offerings {
					xl.Offerings[i].Available = false
				}
			}

			claim := controllertest.NodeClaim(uniq("second"), pool.Name)
			claim.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: tt.options}}
			create(t, claim)
			f.cluster.Nominate("pod-1", claim.Name)
			_, _ = f.reconcile(t, claim.Name)
			got := get(t, claim.Name)
			if tt.wantType != "" {
				if got.Status.InstanceType != tt.wantType {
					t.Fatalf("launched as %q, want %s", got.Status.InstanceType, tt.wantType)
				}
			} else {
				if got.DeletionTimestamp.IsZero() || got.Status.ProviderID != "" {
					t.Fatalf("claim not deleted unlaunched: deletion %v, providerID %q", got.DeletionTimestamp, got.Status.ProviderID)
				}
				if len(f.replayed) != 1 || f.replayed[0] != "pod-1" {
					t.Fatalf("replanned pods = %v, want [pod-1]", f.replayed)
				}
			}
			if n := len(f.cloud.Calls("Create")); n != tt.wantCreates {
				t.Fatalf("%d Create calls, want %d", n, tt.wantCreates)
			}
			for _, in := range f.cloud.Instances() {
				if in.Status.InstanceType == "m5.4xlarge" {
					t.Fatalf("an m5.4xlarge launched past the pool's 8 cpu limit")
				}
			}
		})
	}
}
