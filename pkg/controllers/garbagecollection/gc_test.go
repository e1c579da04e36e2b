package garbagecollection

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

var seq int

func uniq(p string) string {
	seq++
	return fmt.Sprintf("%s-%d-%d", p, time.Now().UnixNano()%100000, seq)
}

func TestCollect(t *testing.T) {
	ctx := context.Background()
	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "zone-a"))
	clk := clocktesting.NewFakeClock(time.Now().Add(time.Hour))
	rec, _ := controllertest.Recorder(clk)
	gc := New(h.Client, cloud, clk, rec, controllertest.Metrics(), Options{Grace: 30 * time.Second})

	// An instance launched for a claim that no longer exists: an orphan.
	orphan := cloud.AddInstance(uniq("deleted-claim"), clk.Now().Add(-time.Minute))
	// An instance too young to judge.
	young := cloud.AddInstance(uniq("racing-claim"), clk.Now().Add(-5*time.Second))
	// A claim whose controller died between CreateFleet and the status
	// update: its instance carries its name, and the next launch finds it.
	midLaunch := controllertest.NodeClaim(uniq("mid-launch"), "pool-a")
	mustCreate(t, midLaunch)
	midInstance := cloud.AddInstance(midLaunch.Name, clk.Now().Add(-time.Minute))
	// A healthy launched claim.
	healthy := controllertest.NodeClaim(uniq("healthy"), "pool-a")
	mustCreate(t, healthy)
	launched, err := cloud.Create(ctx, healthy)
	if err != nil {
		t.Fatal(err)
	}
	setLaunched(t, healthy, launched.Status.ProviderID)
	// A launched claim whose instance vanished.
	vanished := controllertest.NodeClaim(uniq("vanished"), "pool-a")
	mustCreate(t, vanished)
	setLaunched(t, vanished, "fake:///zone-a/i-gone")

	if err := gc.Collect(ctx); err != nil {
		t.Fatalf("Collect: %v", err)
	}

	alive := map[string]bool{}
	for _, in := range cloud.Instances() {
		alive[in.Status.ProviderID] = true
	}
	tests := []struct {
		name      string
		got, want bool
	}{
		{"orphan instance terminated", alive[orphan], false},
		{"young instance kept", alive[young], true},
		{"instance of a claim mid-launch kept", alive[midInstance], true},
		{"instance of a healthy claim kept", alive[launched.Status.ProviderID], true},
		{"claim whose instance vanished deleted", deleting(t, vanished), true},
		{"healthy claim kept", deleting(t, healthy), false},
		{"claim mid-launch kept", deleting(t, midLaunch), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func mustCreate(t *testing.T, c *nsv1.NodeClaim) {
	t.Helper()
	if err := h.Direct.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, c)
}

func setLaunched(t *testing.T, c *nsv1.NodeClaim, providerID string) {
	t.Helper()
	c.Status.ProviderID = providerID
	lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, true, "", ""), c.Generation, metav1.Now())
	if err := h.Direct.Status().Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, c)
	if !meta.IsStatusConditionTrue(c.Status.Conditions, nsv1.ConditionLaunched) {
		t.Fatal("status update lost the Launched condition")
	}
}

func deleting(t *testing.T, c *nsv1.NodeClaim) bool {
	t.Helper()
	got := &nsv1.NodeClaim{}
	err := h.Direct.Get(context.Background(), types.NamespacedName{Name: c.Name}, got)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err != nil || !got.DeletionTimestamp.IsZero()
}
