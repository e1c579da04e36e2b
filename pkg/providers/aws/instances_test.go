package aws

import (
	"testing"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

func TestOrphansAreExactlyTheUntracked(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := e.create(newClaim("a"))
	e.create(newClaim("b"))
	c := e.create(newClaim("c"))
	known := map[string]bool{a.Status.ProviderID: true, "b": true}
	grace := 5 * time.Minute
	orphans, err := e.p.Orphans(e.ctx, known, grace)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 0 {
		t.Errorf("within the grace period: %d orphans, want 0", len(orphans))
	}
	e.clock.Step(grace + time.Second)
	orphans, err = e.p.Orphans(e.ctx, known, grace)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 1 || orphans[0].ProviderID != c.Status.ProviderID || orphans[0].ClaimName() != "c" {
		t.Errorf("orphans = %+v, want only %s", orphans, c.Status.ProviderID)
	}
}

func TestDeleteGetList(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := e.create(newClaim("a"))
	b := e.create(newClaim("b"))
	claims, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, c := range claims {
		names[c.Name] = c.Status.ProviderID
	}
	if len(claims) != 2 || names["a"] != a.Status.ProviderID || names["b"] != b.Status.ProviderID {
		t.Errorf("List = %v, want a and b", names)
	}
	got, err := e.p.Get(e.ctx, a.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a" || got.Status.InstanceType != a.Status.InstanceType || got.Labels[nsv1.LabelNodePool] != "default" {
		t.Errorf("Get = %s %s %v", got.Name, got.Status.InstanceType, got.Labels)
	}
	if err := e.p.Delete(e.ctx, a); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	e.clock.Step(time.Second)
	if err := e.p.Delete(e.ctx, a); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("second Delete = %v, want NodeClaimNotFound", err)
	}
	if _, err := e.p.Get(e.ctx, a.Status.ProviderID); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("Get of a terminated instance = %v, want NodeClaimNotFound", err)
	}
	gone := newClaim("ghost")
	gone.Status.ProviderID = "aws:///us-east-1a/i-0000000000000dead"
	if err := e.p.Delete(e.ctx, gone); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("Delete of an unknown instance = %v, want NodeClaimNotFound", err)
	}
	claims, err = e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].Name != "b" {
		t.Errorf("List after delete = %d claims, want only b", len(claims))
	}
}
