package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
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

// An instance of a shared launch whose answer was lost carries no claim's
// name, only the launch keys of the claims it was started for: it is kept
// while one of them still waits for an instance, however old it is.
func TestCollectKeepsAnUnclaimedInstanceForItsWaitingClaim(t *testing.T) {
	ctx := context.Background()
	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "zone-a"))
	clk := clocktesting.NewFakeClock(time.Now().Add(time.Hour))
	rec, _ := controllertest.Recorder(clk)
	gc := New(h.Client, cloud, clk, rec, controllertest.Metrics(), Options{Grace: 30 * time.Second})

	waiting := controllertest.NodeClaim(uniq("batch-waiting"), "pool-a")
	mustCreate(t, waiting)
	gone := controllertest.NodeClaim(uniq("batch-gone"), "pool-a")
	gone.UID = types.UID(uniq("uid-never-created"))
	launched := controllertest.NodeClaim(uniq("batch-launched"), "pool-a")
	mustCreate(t, launched)
	setLaunched(t, launched, cloud.AddInstance(launched.Name, clk.Now().Add(-time.Hour)))

	forWaiting := cloud.AddUnclaimedInstance(clk.Now().Add(-time.Hour), gone, waiting)
	forNobody := cloud.AddUnclaimedInstance(clk.Now().Add(-time.Hour), gone)
	forLaunched := cloud.AddUnclaimedInstance(clk.Now().Add(-time.Hour), launched)
	if err := gc.Collect(ctx); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	alive := map[string]bool{}
	for _, in := range cloud.Instances() {
		alive[in.Status.ProviderID] = true
	}
	for _, tt := range []struct {
		name      string
		got, want bool
	}{
		{"instance a waiting claim may take kept", alive[forWaiting], true},
		{"instance whose claims are all gone terminated", alive[forNobody], false},
		{"instance whose claim launched another terminated", alive[forLaunched], false},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: alive %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// Garbage collection acts only on answers: when the cloud does not answer
// (List or Get fails, a DescribeInstances page was lost), it terminates no
// instance and deletes no claim.
func TestCollectActsOnlyOnAnswers(t *testing.T) {
	unavailable := cloudprovider.NewCloudUnavailableError(errors.New("RequestLimitExceeded through every retry"))
	tests := []struct {
		name                string
		listErr, getErr     error
		wantErr             bool
		wantOrphanAlive     bool
		wantVanishedDeleted bool
	}{
		{name: "the cloud answers", wantOrphanAlive: false, wantVanishedDeleted: true},
		{name: "listing fails", listErr: unavailable, wantErr: true, wantOrphanAlive: true},
		{name: "the check of a missing instance fails", getErr: unavailable, wantErr: true, wantOrphanAlive: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "zone-a"))
			clk := clocktesting.NewFakeClock(time.Now().Add(time.Hour))
			rec, _ := controllertest.Recorder(clk)
			gc := New(h.Client, cloud, clk, rec, controllertest.Metrics(), Options{Grace: 30 * time.Second})
			orphan := cloud.AddInstance(uniq("orphan"), clk.Now().Add(-time.Hour))
			vanished := controllertest.NodeClaim(uniq("vanished"), "pool-a")
			mustCreate(t, vanished)
			setLaunched(t, vanished, "fake:///zone-a/i-not-listed")
			cloud.ListErr, cloud.GetErr = tt.listErr, tt.getErr

			err := gc.Collect(ctx)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Collect = %v, want error %v", err, tt.wantErr)
			}
			alive := false
			for _, in := range cloud.Instances() {
				alive = alive || in.Status.ProviderID == orphan
			}
			if alive != tt.wantOrphanAlive {
				t.Errorf("orphan alive = %v, want %v", alive, tt.wantOrphanAlive)
			}
			if got := deleting(t, vanished); got != tt.wantVanishedDeleted {
				t.Errorf("claim deleted = %v, want %v", got, tt.wantVanishedDeleted)
			}
		})
	}
}

// When an ODCR ends its instances run on as on-demand: the pass that reads
// an instance no longer in its reservation relabels its claim and Node as
// on-demand, drops the reservation's labels and gives the claim the
// on-demand price; a claim still in its reservation, and a Capacity Block's
// (EC2 terminates those), are left alone.
func TestEndedReservationIsRelabelledOnDemand(t *testing.T) {
	ctx := context.Background()
	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "zone-a"))
	clk := clocktesting.NewFakeClock(time.Now().Add(time.Hour))
	rec, recorded := controllertest.Recorder(clk)
	gc := New(h.Client, cloud, clk, rec, controllertest.Metrics(), Options{Grace: 30 * time.Second})
	reserved := func(name, rtype, instanceCT string) (*nsv1.NodeClaim, *corev1.Node) {
		t.Helper()
		labels := map[string]string{nsv1.LabelCapacityType: nsv1.CapacityTypeReserved, awsv1.LabelCapacityReservationID: "cr-" + name,
			awsv1.LabelCapacityReservationType: rtype, awsv1.LabelCapacityReservationInterruptible: "false"}
		c := controllertest.NodeClaim(uniq(name), "pool-a")
		maps.Copy(c.Labels, labels)
		mustCreate(t, c)
		pid := cloud.AddInstance(c.Name, clk.Now().Add(-time.Hour))
		cloud.SetInstance(pid, func(in *nsv1.NodeClaim) {
			in.Status.CapacityType = instanceCT
			in.Status.Price = nsv1.FormatPrice(0.096)
			if instanceCT == nsv1.CapacityTypeReserved {
				in.Status.Price = nsv1.FormatPrice(0)
			}
		})
		n := controllertest.Node(uniq(name+"-node"), pid, "2")
		maps.Copy(n.Labels, labels)
		if err := h.Direct.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		h.Cached(t, n)
		c.Status.ProviderID, c.Status.NodeName, c.Status.CapacityType, c.Status.Price = pid, n.Name, nsv1.CapacityTypeReserved, nsv1.FormatPrice(0)
		lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, true, "", ""), c.Generation, metav1.Now())
		if err := h.Direct.Status().Update(ctx, c); err != nil {
			t.Fatal(err)
		}
		h.Cached(t, c)
		return c, n
	}
	ended, endedNode := reserved("ended", awsv1.CapacityReservationTypeDefault, nsv1.CapacityTypeOnDemand)
	still, stillNode := reserved("still", awsv1.CapacityReservationTypeDefault, nsv1.CapacityTypeReserved)
	block, blockNode := reserved("block", awsv1.CapacityReservationTypeCapacityBlock, nsv1.CapacityTypeOnDemand)
	if err := gc.Collect(ctx); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	read := func(c *nsv1.NodeClaim, n *corev1.Node) (*nsv1.NodeClaim, *corev1.Node) {
		t.Helper()
		gc, gn := &nsv1.NodeClaim{}, &corev1.Node{}
		if err := h.Direct.Get(ctx, client.ObjectKeyFromObject(c), gc); err != nil {
			t.Fatal(err)
		}
		if err := h.Direct.Get(ctx, client.ObjectKeyFromObject(n), gn); err != nil {
			t.Fatal(err)
		}
		return gc, gn
	}
	c, n := read(ended, endedNode)
	for what, labels := range map[string]map[string]string{"claim": c.Labels, "node": n.Labels} {
		if labels[nsv1.LabelCapacityType] != nsv1.CapacityTypeOnDemand || labels[awsv1.LabelCapacityReservationID] != "" ||
			labels[awsv1.LabelCapacityReservationType] != "" || labels[awsv1.LabelCapacityReservationInterruptible] != "" {
			t.Errorf("ended reservation's %s labels: %v", what, labels)
		}
	}
	if c.Status.CapacityType != nsv1.CapacityTypeOnDemand || c.Status.Price != nsv1.FormatPrice(0.096) ||
		!meta.IsStatusConditionTrue(c.Status.Conditions, nsv1.ConditionLaunched) {
		t.Errorf("ended reservation's claim status: capacity type %q, price %q, conditions %v", c.Status.CapacityType, c.Status.Price, c.Status.Conditions)
	}
	for _, kept := range [][2]client.Object{{still, stillNode}, {block, blockNode}} {
		c, n := read(kept[0].(*nsv1.NodeClaim), kept[1].(*corev1.Node))
		if c.Labels[nsv1.LabelCapacityType] != nsv1.CapacityTypeReserved || n.Labels[awsv1.LabelCapacityReservationID] == "" ||
			c.Status.CapacityType != nsv1.CapacityTypeReserved || c.Status.Price != nsv1.FormatPrice(0) {
			t.Errorf("%s relabelled: labels %v, node labels %v, status %q %q", c.Name, c.Labels, n.Labels, c.Status.CapacityType, c.Status.Price)
		}
	}
	found := false
	for len(recorded.Events) > 0 {
		if ev := <-recorded.Events; strings.Contains(ev, "ReservationEnded") && strings.Contains(ev, "cr-ended") {
			found = true
		}
	}
	if !found {
		t.Error("no ReservationEnded event on the relabelled claim")
	}
}
