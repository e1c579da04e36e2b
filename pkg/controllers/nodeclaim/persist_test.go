package nodeclaim

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

func TestMetadataPatchCarriesOnlyTheKeysThatChanged(t *testing.T) {
	claim := func(labels, annotations map[string]string) *nsv1.NodeClaim {
		return &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: labels, Annotations: annotations}}
	}
	for _, tc := range []struct {
		name      string
		base, now *nsv1.NodeClaim
		want      string
	}{
		{"unchanged", claim(map[string]string{"a": "1"}, nil), claim(map[string]string{"a": "1"}, map[string]string{}), ""},
		{"added, changed and kept", claim(map[string]string{"a": "1", "b": "2"}, nil), claim(map[string]string{"a": "1", "b": "3", "c": "4"}, nil),
			`{"metadata":{"labels":{"b":"3","c":"4"}}}`},
		{"removed", claim(map[string]string{"a": "1"}, map[string]string{"x": "y"}), claim(nil, map[string]string{"x": "y", "z": ""}),
			`{"metadata":{"labels":{"a":null},"annotations":{"z":""}}}`},
	} {
		got := string(metadataPatch(tc.base, tc.now))
		if got != tc.want {
			t.Errorf("%s: patch %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Persist against the API server: a label removed and one added, an
// annotation changed, and the status; the claim ends as written, and the
// labels and annotations it did not change are kept.
func TestPersistWritesLabelsAnnotationsAndStatus(t *testing.T) {
	ctx := context.Background()
	c := controllertest.NodeClaim("persist-meta", "default")
	c.Labels["gone"] = "soon"
	c.Annotations = map[string]string{"keep": "1", "change": "old"}
	claim := create(t, c)
	base := claim.DeepCopy()
	delete(claim.Labels, "gone")
	claim.Labels["new"] = "label"
	claim.Annotations["change"] = "new"
	claim.Status.ProviderID = "aws:///zone-a/i-persist"
	lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, true, "", ""), claim.Generation, metav1.Now())
	if err := Persist(ctx, h.Direct, base, claim); err != nil {
		t.Fatal(err)
	}
	got := get(t, "persist-meta")
	if _, ok := got.Labels["gone"]; ok || got.Labels["new"] != "label" || got.Labels[nsv1.LabelNodePool] != "default" {
		t.Errorf("labels %v", got.Labels)
	}
	if got.Annotations["keep"] != "1" || got.Annotations["change"] != "new" {
		t.Errorf("annotations %v", got.Annotations)
	}
	if got.Status.ProviderID != "aws:///zone-a/i-persist" || !lifecycle.IsTrue(got.Status.Conditions, nsv1.ConditionLaunched) {
		t.Errorf("status %+v", got.Status)
	}
	if claim.ResourceVersion != got.ResourceVersion || claim.Labels["new"] != "label" || claim.Status.ProviderID != got.Status.ProviderID {
		t.Errorf("the claim holds rv %s labels %v providerID %q, the server rv %s", claim.ResourceVersion, claim.Labels,
			claim.Status.ProviderID, got.ResourceVersion)
	}
}
