package integration

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TestNodePoolDefaults sends the smallest NodePool a user can write (no
// disruption block at all) and checks every default the controllers rely on.
func TestNodePoolDefaults(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nodesmith.sh/v1",
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": "minimal"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": "aws.nodesmith.sh", "kind": "EC2NodeClass", "name": "default"},
		}}},
	}}
	if err := env.Client.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("defaults-test")); err != nil {
		t.Fatal(err)
	}
	np := getNodePool(t, "minimal")
	d := np.Spec.Disruption
	tests := []struct {
		name string
		ok   bool
		got  any
	}{
		{"expireAfter 720h", np.Spec.Template.Spec.ExpireAfter.Duration != nil && *np.Spec.Template.Spec.ExpireAfter.Duration == 720*time.Hour,
			np.Spec.Template.Spec.ExpireAfter.ToUnstructured()},
		{"consolidationPolicy WhenEmptyOrUnderutilized", d.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmptyOrUnderutilized, d.ConsolidationPolicy},
		{"consolidateAfter 0s", d.ConsolidateAfter.Duration != nil && *d.ConsolidateAfter.Duration == 0, d.ConsolidateAfter.ToUnstructured()},
		{"returnToSpot Enabled", d.ReturnToSpot == v1.ReturnToSpotEnabled, d.ReturnToSpot},
		{"one budget of 10%", len(d.Budgets) == 1 && d.Budgets[0].Nodes == "10%", d.Budgets},
		{"no weight", np.Spec.Weight == nil, np.Spec.Weight},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: got %v", tt.name, tt.got)
		}
	}
}
