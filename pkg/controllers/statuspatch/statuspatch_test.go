package statuspatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
)

var t0 = metav1.NewTime(time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC))

// store is the simulator's API server: the same resourceVersion checks and
// merge patches the controllers meet there.
func store(t *testing.T) client.Client {
	t.Helper()
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	if err := nsv1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	return apiserver.New(sch, clocktesting.NewFakeClock(t0.Time), 1).Client()
}

func newClaim(t *testing.T, kube client.Client, name string, conds ...metav1.Condition) *nsv1.NodeClaim {
	t.Helper()
	ctx := context.Background()
	c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := kube.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if len(conds) > 0 {
		base := c.DeepCopy()
		c.Status.Conditions = conds
		if err := statuspatch.Patch(ctx, kube, base, c); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func set(c *nsv1.NodeClaim, t string, ok bool, msg string) {
	lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(t, ok, "", msg), c.Generation, t0)
}

func read(t *testing.T, kube client.Client, name string) *nsv1.NodeClaim {
	t.Helper()
	c := &nsv1.NodeClaim{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func wantCondition(t *testing.T, c *nsv1.NodeClaim, typ string, status metav1.ConditionStatus, msg string) {
	t.Helper()
	got := meta.FindStatusCondition(c.Status.Conditions, typ)
	if got == nil || got.Status != status || got.Message != msg {
		t.Fatalf("%s: got %+v, want status %s message %q (all: %+v)", typ, got, status, msg, c.Status.Conditions)
	}
}

// A writer holding a copy read before another writer's change keeps that
// change: its condition, and a status field it did not touch.
func TestStaleWriterKeepsOthersConditionsAndFields(t *testing.T) {
	ctx := context.Background()
	kube := store(t)
	newClaim(t, kube, "c", lifecycle.Condition(nsv1.ConditionLaunched, false, "Pending", "launching"))

	lifecycleCopy := read(t, kube, "c") // the lifecycle controller reads ...

	other := read(t, kube, "c") // ... the interruption handler and the pod events controller write
	base := other.DeepCopy()
	set(other, nsv1.ConditionDisrupting, true, "spot interruption")
	other.Status.LastPodEventTime = t0
	if err := statuspatch.Patch(ctx, kube, base, other); err != nil {
		t.Fatal(err)
	}

	base = lifecycleCopy.DeepCopy() // ... and the lifecycle controller writes from its old copy
	set(lifecycleCopy, nsv1.ConditionLaunched, true, "")
	set(lifecycleCopy, nsv1.ConditionRegistered, true, "")
	lifecycleCopy.Status.ProviderID = "aws:///zone-a/i-1"
	if err := statuspatch.Patch(ctx, kube, base, lifecycleCopy); err != nil {
		t.Fatal(err)
	}

	got := read(t, kube, "c")
	wantCondition(t, got, nsv1.ConditionDisrupting, metav1.ConditionTrue, "spot interruption")
	wantCondition(t, got, nsv1.ConditionLaunched, metav1.ConditionTrue, "")
	wantCondition(t, got, nsv1.ConditionRegistered, metav1.ConditionTrue, "")
	if got.Status.ProviderID != "aws:///zone-a/i-1" || !got.Status.LastPodEventTime.Equal(&t0) {
		t.Fatalf("providerID %q, lastPodEventTime %v: a field was lost", got.Status.ProviderID, got.Status.LastPodEventTime)
	}
	if lifecycleCopy.ResourceVersion != got.ResourceVersion || len(lifecycleCopy.Status.Conditions) != 3 {
		t.Fatalf("the writer's object is not the written one: rv %s vs %s, %+v", lifecycleCopy.ResourceVersion, got.ResourceVersion, lifecycleCopy.Status.Conditions)
	}
}

// A condition the writer removed goes; one added meanwhile by someone else stays.
func TestStaleWriterRemovesOnlyItsOwn(t *testing.T) {
	ctx := context.Background()
	kube := store(t)
	newClaim(t, kube, "c", lifecycle.Condition(nsv1.ConditionDisrupting, true, "", "rebalance"))
	mine := read(t, kube, "c")

	other := read(t, kube, "c")
	base := other.DeepCopy()
	set(other, nsv1.ConditionLaunched, true, "")
	if err := statuspatch.Patch(ctx, kube, base, other); err != nil {
		t.Fatal(err)
	}

	base = mine.DeepCopy()
	meta.RemoveStatusCondition(&mine.Status.Conditions, nsv1.ConditionDisrupting)
	if err := statuspatch.Patch(ctx, kube, base, mine); err != nil {
		t.Fatal(err)
	}
	got := read(t, kube, "c")
	if meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionDisrupting) != nil || len(got.Status.Conditions) != 1 {
		t.Fatalf("conditions %+v, want only Launched", got.Status.Conditions)
	}
	wantCondition(t, got, nsv1.ConditionLaunched, metav1.ConditionTrue, "")
}

// Onto: the writer's own metadata patch moved the object on; the status
// patch is locked on that copy and needs no second read.
func TestOntoAfterOwnMetadataPatch(t *testing.T) {
	ctx := context.Background()
	kube := store(t)
	newClaim(t, kube, "c")
	claim := read(t, kube, "c")
	base := claim.DeepCopy()
	claim.Labels = map[string]string{"x": "y"}
	set(claim, nsv1.ConditionLaunched, true, "")
	want := claim.Status.DeepCopy()
	if err := kube.Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	cur := claim.DeepCopy()
	claim.Status = *want
	noReads := failingReader{}
	if err := statuspatch.Patch(ctx, kube, base, claim, statuspatch.Onto(cur), statuspatch.ReadFrom(noReads)); err != nil {
		t.Fatal(err)
	}
	got := read(t, kube, "c")
	wantCondition(t, got, nsv1.ConditionLaunched, metav1.ConditionTrue, "")
	if got.Labels["x"] != "y" {
		t.Fatalf("labels %v", got.Labels)
	}
}

type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	panic("read again although no one else wrote")
}

func TestNothingToWriteSendsNothing(t *testing.T) {
	kube := store(t)
	claim := newClaim(t, kube, "c")
	rv := claim.ResourceVersion
	if err := statuspatch.Patch(context.Background(), nil, claim.DeepCopy(), claim); err != nil {
		t.Fatal(err) // a nil client would panic if it were used
	}
	if claim.ResourceVersion != rv {
		t.Fatal("the object changed")
	}
}

func TestRefusesAStatusWithoutMetav1Conditions(t *testing.T) {
	p := &corev1.Pod{}
	err := statuspatch.Patch(context.Background(), nil, p, p.DeepCopy())
	if err == nil || !strings.Contains(err.Error(), "*v1.Pod") {
		t.Fatalf("err %v, want a refusal naming *v1.Pod", err)
	}
}

// recording is a client whose status patches are kept as sent.
type recording struct {
	client.Client
	sent *[]string
}

func (r recording) Status() client.SubResourceWriter {
	return recordingStatus{r.Client.Status(), r.sent}
}

type recordingStatus struct {
	client.SubResourceWriter
	sent *[]string
}

func (r recordingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	*r.sent = append(*r.sent, string(data))
	return r.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// The patch sent is the lock and the status fields that changed: nothing
// of the spec or of the rest of the metadata, nor status fields left alone.
func TestPatchCarriesOnlyTheLockAndTheStatusChange(t *testing.T) {
	ctx := context.Background()
	var sent []string
	kube := recording{store(t), &sent}
	claim := newClaim(t, kube, "c")
	claim.Labels = map[string]string{"big": strings.Repeat("x", 100)}
	claim.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"v"}}}
	if err := kube.Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	base := claim.DeepCopy()
	claim.Status.ProviderID = "aws:///zone-a/i-1"
	if err := statuspatch.Patch(ctx, kube, base, claim); err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"resourceVersion":"` + base.ResourceVersion + `"},"status":{"providerID":"aws:///zone-a/i-1"}}`
	if len(sent) != 1 || sent[0] != want {
		t.Fatalf("sent %q, want [%q]", sent, want)
	}
	if got := read(t, kube, "c"); got.Status.ProviderID != "aws:///zone-a/i-1" || got.Labels["big"] == "" || claim.ResourceVersion != got.ResourceVersion {
		t.Fatalf("written %+v, writer holds rv %s", got, claim.ResourceVersion)
	}
}
