package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TestImmutableFields checks the transition rules: a NodeClaim's spec and a
// NodePool's nodeClassRef group and kind cannot change after creation, while
// the rest of a pool (here its name reference) still may.
func TestImmutableFields(t *testing.T) {
	tests := []struct {
		name   string
		obj    client.Object
		update func(client.Object)
		want   string // "" means the update must succeed
	}{
		{"nodepool nodeClassRef group", validNodePool("immutable-group"), func(o client.Object) {
			o.(*v1.NodePool).Spec.Template.Spec.NodeClassRef.Group = "example.com"
		}, "nodeClassRef.group is immutable"},
		{"nodepool nodeClassRef kind", validNodePool("immutable-kind"), func(o client.Object) {
			o.(*v1.NodePool).Spec.Template.Spec.NodeClassRef.Kind = "OtherNodeClass"
		}, "nodeClassRef.kind is immutable"},
		{"nodepool nodeClassRef name may change", validNodePool("mutable-name"), func(o client.Object) {
			o.(*v1.NodePool).Spec.Template.Spec.NodeClassRef.Name = "other"
		}, ""},
		{"nodeclaim requirements", validNodeClaim("immutable-claim-reqs"), func(o client.Object) {
			o.(*v1.NodeClaim).Spec.Requirements[0].Values = []string{"c5.large"}
		}, "spec is immutable: delete the NodeClaim and let Nodesmith launch a new one"},
		{"nodeclaim resources", validNodeClaim("immutable-claim-resources"), func(o client.Object) {
			o.(*v1.NodeClaim).Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}, "spec is immutable"},
		{"nodeclaim labels may change", validNodeClaim("mutable-claim-labels"), func(o client.Object) {
			o.SetLabels(map[string]string{"team": "a"})
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := env.Client.Create(t.Context(), tt.obj); err != nil {
				t.Fatalf("creating: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), tt.obj) })
			tt.update(tt.obj)
			err := env.Client.Update(t.Context(), tt.obj)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("update refused: %v", err)
			case tt.want == "":
			case err == nil:
				t.Fatalf("update accepted, want refused with %q", tt.want)
			case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want):
				t.Errorf("message\n  %v\nwant it to contain\n  %s", err, tt.want)
			}
		})
	}
}
