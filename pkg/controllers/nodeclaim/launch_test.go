package nodeclaim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

func TestLaunch(t *testing.T) {
	tests := []struct {
		name         string
		createErr    error
		requirements []nsv1.NodeSelectorRequirementWithMinValues
		wantErr      bool
		wantDeleted  bool
		wantReason   string // Launched condition reason
		wantType     string
		wantCapacity string
	}{
		{name: "launches the cheapest allowed offering", wantReason: nsv1.ConditionLaunched, wantType: "m5.large", wantCapacity: nsv1.CapacityTypeSpot},
		{name: "requirements narrow the choice", wantReason: nsv1.ConditionLaunched, wantType: "m5.xlarge", wantCapacity: nsv1.CapacityTypeOnDemand,
			requirements: []nsv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.xlarge"}},
				{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{nsv1.CapacityTypeOnDemand}},
			}},
		{name: "insufficient capacity deletes the claim and replans its pods",
			createErr: cloudprovider.NewInsufficientCapacityError(errors.New("every pool is out")), wantDeleted: true},
		{name: "node class not ready is recorded", createErr: cloudprovider.NewNodeClassNotReadyError(errors.New("no subnets")),
			wantErr: true, wantReason: "NodeClassNotReady"},
		{name: "other errors are retried", createErr: errors.New("throttled"), wantErr: true, wantReason: "LaunchFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			f.cloud.CreateErr = tt.createErr
			claim := controllertest.NodeClaim(uniq("launch"), "pool-a")
			claim.Spec.Requirements = tt.requirements
			create(t, claim)
			f.cluster.Nominate("pod-1", claim.Name)

			_, err := f.reconcile(t, claim.Name)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile error = %v, want error %v", err, tt.wantErr)
			}
			got := get(t, claim.Name)
			if tt.wantDeleted {
				if got.DeletionTimestamp.IsZero() {
					t.Fatal("claim was not deleted after insufficient capacity")
				}
				if len(f.replayed) != 1 || f.replayed[0] != "pod-1" {
					t.Fatalf("replanned pods = %v, want [pod-1]", f.replayed)
				}
				return
			}
			if !hasFinalizer(got) {
				t.Errorf("claim has no termination finalizer")
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionLaunched)
			if cond == nil || cond.Reason != tt.wantReason {
				t.Fatalf("Launched condition = %+v, want reason %s", cond, tt.wantReason)
			}
			if tt.wantType == "" {
				if got.Status.ProviderID != "" {
					t.Fatalf("failed launch recorded providerID %s", got.Status.ProviderID)
				}
				return
			}
			if got.Status.InstanceType != tt.wantType || got.Status.CapacityType != tt.wantCapacity || got.Status.ProviderID == "" || got.Status.Price == "" {
				t.Fatalf("status = %+v, want %s %s with providerID and price", got.Status, tt.wantType, tt.wantCapacity)
			}
			if got.Labels[corev1.LabelInstanceTypeStable] != tt.wantType || got.Labels[nsv1.LabelCapacityType] != tt.wantCapacity {
				t.Fatalf("labels = %v, want the launched type and capacity type", got.Labels)
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionReady)
			if ready == nil || ready.Reason != "NotRegistered" {
				t.Fatalf("Ready condition = %+v, want NotRegistered", ready)
			}
		})
	}
}

func TestLaunchIsIdempotent(t *testing.T) {
	f := newFixture()
	claim := create(t, controllertest.NodeClaim(uniq("twice"), "pool-a"))
	for range 2 {
		if _, err := f.reconcile(t, claim.Name); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.cloud.Calls("Create")); n != 1 {
		t.Fatalf("Create called %d times for one claim, want 1", n)
	}
	if n := len(f.cloud.Instances()); n != 1 {
		t.Fatalf("%d instances for one claim, want 1", n)
	}
}

func TestLaunchWaitsWhileAnotherLaunchIsInFlight(t *testing.T) {
	f := newFixture()
	claim := create(t, controllertest.NodeClaim(uniq("busy"), "pool-a"))
	f.cluster.StartLaunch(claim.Name)
	res, err := f.reconcile(t, claim.Name)
	if err != nil || res.RequeueAfter == 0 {
		t.Fatalf("Reconcile = %+v, %v; want a requeue while the provisioner launches", res, err)
	}
	if n := len(f.cloud.Calls("Create")); n != 0 {
		t.Fatalf("Create called %d times while another launch held the claim", n)
	}
}

// A claim launched a moment ago (by the provisioner, whose status write the
// cache has not shown yet) is not launched again from a stale copy: the
// controller waits instead of calling the cloud a second time, until
// state.LaunchedHold has passed.
func TestLaunchDoesNotRepeatALaunchTheCacheHasNotShownYet(t *testing.T) {
	f := newFixture()
	claim := create(t, controllertest.NodeClaim(uniq("stale"), "pool-a"))
	stale := claim.DeepCopy()
	if out, err := f.c.launcher.Launch(context.Background(), claim); out != Launched || err != nil {
		t.Fatalf("first launch = %v, %v", out, err)
	}
	if out, err := f.c.launcher.Launch(context.Background(), stale); out != Busy || err != nil {
		t.Fatalf("launch from a stale copy = %v, %v; want Busy", out, err)
	}
	if n := len(f.cloud.Calls("Create")); n != 1 {
		t.Fatalf("Create called %d times, want 1", n)
	}
	f.clk.Step(state.LaunchedHold)
	if out, err := f.c.launcher.Launch(context.Background(), stale); out != Launched || err != nil {
		t.Fatalf("launch past the hold = %v, %v; want Launched", out, err)
	}
	if n := len(f.cloud.Calls("Create")); n != 2 {
		t.Fatalf("Create called %d times past the hold, want 2 (the provider adopts the instance)", n)
	}
}

// A launch whose status write failed is not held for state.LaunchedHold:
// the cache will never show that status, so the next reconcile launches
// again at once and the provider adopts the instance by its claim tag.
func TestLaunchWhoseStatusWriteFailedIsNotHeld(t *testing.T) {
	f := newFixture()
	claim := create(t, controllertest.NodeClaim(uniq("unwritten"), "pool-a"))
	failing := statusWritesFail{h.Client}
	rec, _ := controllertest.Recorder(f.clk)
	broken := New(failing, f.cloud, f.cluster, f.clk, rec, controllertest.Metrics(), Options{
		Timeouts: lifecycle.Timeouts{Launch: 5 * time.Minute, Registration: 15 * time.Minute},
	})
	if _, err := broken.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: claim.Name}}); err == nil {
		t.Fatal("reconcile with a failing status write returned no error")
	}
	if n := len(f.cloud.Calls("Create")); n != 1 {
		t.Fatalf("Create called %d times, want 1", n)
	}
	stale := &nsv1.NodeClaim{}
	if err := h.Client.Get(context.Background(), types.NamespacedName{Name: claim.Name}, stale); err != nil {
		t.Fatal(err)
	}
	if lifecycle.IsTrue(stale.Status.Conditions, nsv1.ConditionLaunched) {
		t.Fatal("the failed status write reached the API server")
	}
	if out, err := f.c.launcher.Launch(context.Background(), stale); out != Launched || err != nil {
		t.Fatalf("launch after the failed status write = %v, %v; want Launched at once, not held", out, err)
	}
	if n := len(f.cloud.Calls("Create")); n != 2 {
		t.Fatalf("Create called %d times, want 2", n)
	}
}

// statusWritesFail is a client whose status writes fail, as while the API
// server restarts.
type statusWritesFail struct{ client.Client }

func (c statusWritesFail) Status() client.SubResourceWriter { return failingWriter{c.Client.Status()} }

type failingWriter struct{ client.SubResourceWriter }

func (failingWriter) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return errors.New("the API server is restarting")
}

func (failingWriter) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return errors.New("the API server is restarting")
}

func hasFinalizer(c *nsv1.NodeClaim) bool {
	for _, f := range c.Finalizers {
		if f == nsv1.TerminationFinalizer {
			return true
		}
	}
	return false
}

// The launch attempt (and with it the provider's idempotency token) moves on
// only after the cloud rejected a launch; a launch with no answer is retried
// as the same attempt, and the attempt survives in the claim for a
// restarted controller.
func TestLaunchAttemptMovesOnOnlyAfterARejection(t *testing.T) {
	f := newFixture()
	f.cloud.NextCreateErrs = []error{
		cloudprovider.NewLaunchRejectedError(errors.New("VcpuLimitExceeded")),
		cloudprovider.NewCloudUnavailableError(errors.New("RequestLimitExceeded")),
		cloudprovider.NewLaunchRejectedError(errors.New("InvalidParameterValue")),
	}
	claim := create(t, controllertest.NodeClaim(uniq("attempt"), "pool-a"))
	steps := []struct {
		wantAttempt string
		wantReason  string
	}{
		{"1", "LaunchFailed"},
		{"1", lifecycle.ReasonCloudUnavailable},
		{"2", "LaunchFailed"},
		{"2", nsv1.ConditionLaunched},
	}
	for i, st := range steps {
		_, err := f.reconcile(t, claim.Name)
		if (err != nil) != (i < 3) {
			t.Fatalf("step %d: Reconcile = %v", i, err)
		}
		got := get(t, claim.Name)
		if a := got.Annotations[nsv1.AnnotationLaunchAttempt]; a != st.wantAttempt {
			t.Errorf("step %d: persisted launch attempt %q, want %q", i, a, st.wantAttempt)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionLaunched); c == nil || c.Reason != st.wantReason {
			t.Errorf("step %d: Launched condition %+v, want reason %s", i, c, st.wantReason)
		}
	}
	var attempts []int
	for _, c := range f.cloud.Calls("Create") {
		attempts = append(attempts, c.LaunchAttempt)
	}
	if want := []int{0, 1, 1, 2}; !slices.Equal(attempts, want) {
		t.Errorf("Create saw launch attempts %v, want %v", attempts, want)
	}
}

// A launch the cloud rejects for an account setup step (the EC2 Spot
// service-linked role) says so in the Launched condition's reason and in an
// Event of that reason, with the fix in the message.
func TestAccountSetupRejectionNamesTheFix(t *testing.T) {
	f := newFixture()
	fix := "create it with aws iam create-service-linked-role --aws-service-name spot.amazonaws.com"
	f.cloud.NextCreateErrs = []error{cloudprovider.NewLaunchRejectedError(&cloudprovider.AccountSetupError{
		Reason: "SpotServiceLinkedRoleMissing", Err: errors.New("AuthFailure.ServiceLinkedRoleCreationNotPermitted: " + fix)})}
	claim := create(t, controllertest.NodeClaim(uniq("slr"), "pool-a"))
	if _, err := f.reconcile(t, claim.Name); err == nil {
		t.Fatal("Reconcile succeeded; want the rejection")
	}
	c := meta.FindStatusCondition(get(t, claim.Name).Status.Conditions, nsv1.ConditionLaunched)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "SpotServiceLinkedRoleMissing" || !strings.Contains(c.Message, fix) {
		t.Fatalf("Launched condition %+v, want False, reason SpotServiceLinkedRoleMissing, the fix in the message", c)
	}
	found := false
	for len(f.events.Events) > 0 {
		e := <-f.events.Events
		found = found || strings.HasPrefix(e, "Warning SpotServiceLinkedRoleMissing ") && strings.Contains(e, fix)
	}
	if !found {
		t.Error("no Warning event SpotServiceLinkedRoleMissing naming the fix")
	}
}
