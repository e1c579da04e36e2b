package provisioner

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// A capacity buffer's virtual pods get claims of their own after the real
// pods are planned, are never nominated, and get no second claim once
// their room is in flight.
func TestProvisionKeepsBufferRoom(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, "1500m")
	tmpl := &corev1.PodTemplateSpec{Spec: controllertest.Pod(f.ns, "chunk", "1500m").Spec}
	tmpl.Spec.NodeSelector = f.pool.Spec.Template.ObjectMeta.Labels
	b := &cbv1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "warm"}}
	virtual := provisioning.BufferPods(b, tmpl, 2)
	f.cluster.SetBufferPods(f.ns+"/warm", virtual)

	if err := f.p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	claims := f.claims(t)
	if len(claims) < 2 {
		t.Fatalf("%d claims, want the real pod's and at least one for the buffer's 2 chunks of 1500m", len(claims))
	}
	for _, p := range virtual {
		if target, _, ok := f.cluster.Nominated(p.UID); ok {
			t.Errorf("virtual pod %s nominated to %s", p.Name, target)
		}
	}
	if err := f.p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if again := f.claims(t); len(again) != len(claims) {
		t.Fatalf("a second cycle made %d more claims: the buffer's in-flight room was not counted", len(again)-len(claims))
	}
	// Without the buffer nothing more is launched either; with it gone,
	// the cycle has nothing to do.
	f.cluster.SetBufferPods(f.ns+"/warm", nil)
	if err := f.p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if again := f.claims(t); len(again) != len(claims) {
		t.Fatalf("%d claims after the buffer went, want %d", len(again), len(claims))
	}
}
