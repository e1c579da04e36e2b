package provisioningrequest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

const ns = "default"

func suffix() string { return fmt.Sprint(time.Now().UnixNano() % 1000000) }

type fixture struct {
	clk     *clocktesting.FakeClock
	cluster *state.Cluster
	c       *Controller
}

func newFixture() *fixture {
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "us-east-1a"), fake.InstanceType("m5.xlarge", 4, 16, 0.192, "us-east-1a"))
	rec, _ := controllertest.Recorder(clk)
	cluster := state.NewCluster(h.Client, clk, time.Minute)
	return &fixture{clk: clk, cluster: cluster, c: New(h.Client, cluster, cloud, clk, rec, controllertest.Metrics(), Options{})}
}

func create(t *testing.T, o client.Object) {
	t.Helper()
	if err := h.Direct.Create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, o)
}

// template creates a PodTemplate of pods requesting cpu, selecting nodes
// labelled key=value (so other tests' nodes and pools stay out).
func template(t *testing.T, name, cpu, key, value string) {
	t.Helper()
	create(t, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{NodeSelector: map[string]string{key: value}, Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}})
}

func request(t *testing.T, name, class, tmpl string, count int32) *prv1.ProvisioningRequest {
	t.Helper()
	pr := &prv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: prv1.ProvisioningRequestSpec{
		ProvisioningClassName: class, PodSets: []prv1.PodSet{{PodTemplateRef: prv1.Reference{Name: tmpl}, Count: count}}}}
	create(t, pr)
	return pr
}

func (f *fixture) reconcile(t *testing.T, name string) reconcile.Result {
	t.Helper()
	res, err := f.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// fresh reads the request from the API server and waits for the cache to
// hold it too, so the next reconcile sees what was written.
func fresh(t *testing.T, name string) *prv1.ProvisioningRequest {
	t.Helper()
	pr := &prv1.ProvisioningRequest{}
	if err := h.Direct.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pr); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pr)
	return pr
}

func wantCondition(t *testing.T, pr *prv1.ProvisioningRequest, typ string, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	c := meta.FindStatusCondition(pr.Status.Conditions, typ)
	if c == nil || c.Status != status || (reason != "" && c.Reason != reason) || !strings.Contains(c.Message, msg) {
		t.Fatalf("%s = %+v, want %s %s %q", typ, c, status, reason, msg)
	}
}

func requestClaims(t *testing.T, key string) []nsv1.NodeClaim {
	t.Helper()
	var list nsv1.NodeClaimList
	if err := h.Direct.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var out []nsv1.NodeClaim
	for _, c := range list.Items {
		if c.Annotations[provisioning.AnnotationRequestPod] == key {
			out = append(out, c)
		}
	}
	return out
}

// check-capacity answers from the ready nodes alone and launches nothing:
// Provisioned when every pod fits (the nodes booked), Failed with the
// reason when not, Failed when a template is missing; another class is
// left alone.
func TestCheckCapacity(t *testing.T) {
	s := suffix()
	label := "provreq-check-" + s
	node := controllertest.Node("check-"+s, "fake:///check-"+s, "4")
	node.Labels[label] = "yes"
	node.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("16Gi")
	status := node.Status
	create(t, node)
	node.Status = status // the create dropped it: a subresource
	h.SetNodeReady(t, node, corev1.ConditionTrue)
	node.Spec.Taints = nil // the API server's admission taints a new node not-ready
	if err := h.Direct.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, node)
	template(t, "check-"+s, "1", label, "yes")
	tests := []struct {
		name, class string
		tmpl        string
		count       int32
		want        metav1.ConditionStatus
		failed      bool
		retry       bool
		reason, msg string
	}{
		{name: "fits", class: prv1.ClassCheckCapacity, tmpl: "check-" + s, count: 4, want: metav1.ConditionTrue, msg: "all 4 pods fit"},
		{name: "does-not-fit", class: prv1.ClassCheckCapacity, tmpl: "check-" + s, count: 5, want: metav1.ConditionFalse, retry: true,
			reason: provisioning.ReasonNotFit, msg: "1 of 5 pods do not fit"},
		{name: "no-template", class: prv1.ClassCheckCapacity, tmpl: "gone-" + s, count: 1, want: metav1.ConditionFalse, failed: true,
			reason: provisioning.ReasonTemplateMissing, msg: "gone-" + s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			name := tt.name + "-" + s
			request(t, name, tt.class, tt.tmpl, tt.count)
			res := f.reconcile(t, name)
			pr := fresh(t, name)
			if want := map[bool]time.Duration{true: provisioning.RetryFirst}[tt.retry]; res.RequeueAfter != want {
				t.Errorf("requeued after %s, want %s", res.RequeueAfter, want)
			}
			wantCondition(t, pr, prv1.ConditionAccepted, metav1.ConditionTrue, "", prv1.ClassCheckCapacity)
			wantCondition(t, pr, prv1.ConditionProvisioned, tt.want, tt.reason, tt.msg)
			if tt.failed {
				wantCondition(t, pr, prv1.ConditionFailed, metav1.ConditionTrue, tt.reason, tt.msg)
			} else if meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionFailed) != nil {
				t.Error("Failed set on a request that fits")
			}
			if got := f.cluster.Booked(node.Name); got != (!tt.failed && !tt.retry) {
				t.Errorf("node booked %v, want %v", got, !tt.failed && !tt.retry)
			}
			if n := len(requestClaims(t, ns+"/"+name)); n != 0 {
				t.Errorf("check-capacity created %d nodeclaims", n)
			}
		})
	}
	t.Run("another class", func(t *testing.T) {
		f := newFixture()
		name := "other-" + s
		request(t, name, "queued-provisioning.gke.io", "check-"+s, 1)
		f.reconcile(t, name)
		if pr := fresh(t, name); len(pr.Status.Conditions) != 0 {
			t.Errorf("conditions %+v on another provisioner's request", pr.Status.Conditions)
		}
	})
}

func pool(t *testing.T, name string, nodeLimit int64) {
	t.Helper()
	p := controllertest.NodePool(name)
	if nodeLimit > 0 {
		p.Spec.Limits = nsv1.Limits{nsv1.ResourceNodes: *resource.NewQuantity(nodeLimit, resource.DecimalSI)}
	}
	create(t, p)
}

func setLaunched(t *testing.T, c *nsv1.NodeClaim, ok bool, reason, msg string) {
	t.Helper()
	lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, ok, reason, msg), c.Generation, metav1.Now())
	if err := h.Direct.Status().Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, c)
}

// launching makes an atomic request named prefix-<suffix> for pods 3-cpu
// pods on a pool of its own, plans it once and returns the fixture, the
// request's name and its claims (one per pod), after the cache holds the
// status that names them.
func launching(t *testing.T, prefix string, pods int32) (*fixture, string, []nsv1.NodeClaim) {
	t.Helper()
	name := prefix + "-" + suffix()
	pool(t, name, 0)
	template(t, name, "3", nsv1.LabelNodePool, name)
	f := newFixture()
	request(t, name, prv1.ClassAtomicScaleUp, name, pods)
	f.reconcile(t, name)
	claims := requestClaims(t, ns+"/"+name)
	if len(claims) != int(pods) {
		t.Fatalf("%d nodeclaims, want %d (one 4-cpu node per 3-cpu pod)", len(claims), pods)
	}
	fresh(t, name)
	return f, name, claims
}

// provisioned is launching with every claim launched and the request
// Provisioned (and read back).
func provisioned(t *testing.T, prefix string, pods int32) (*fixture, string, []nsv1.NodeClaim) {
	t.Helper()
	f, name, claims := launching(t, prefix, pods)
	for i := range claims {
		setLaunched(t, &claims[i], true, "", "")
	}
	f.reconcile(t, name)
	wantCondition(t, fresh(t, name), prv1.ConditionProvisioned, metav1.ConditionTrue, "", "")
	return f, name, claims
}

// An atomic request gets claims for all its pods; once every claim has
// launched it is Provisioned and its claims are booked (the disruption
// planner keeps them) for the booking window, then BookingExpired.
func TestAtomicProvisionedAndBooked(t *testing.T) {
	s := suffix()
	poolName := "atomic-ok-" + s
	pool(t, poolName, 0)
	template(t, poolName, "3", nsv1.LabelNodePool, poolName)
	f := newFixture()
	request(t, poolName, prv1.ClassAtomicScaleUp, poolName, 3)
	key := ns + "/" + poolName
	f.reconcile(t, poolName)
	f.reconcile(t, poolName) // before the cache shows the status: no second set
	claims := requestClaims(t, key)
	if len(claims) != 3 {
		t.Fatalf("%d nodeclaims, want 3 (one 4-cpu node per 3-cpu pod)", len(claims))
	}
	pr := fresh(t, poolName)
	wantCondition(t, pr, prv1.ConditionProvisioned, metav1.ConditionFalse, provisioning.ReasonLaunching, "")
	if got := strings.Split(string(pr.Status.ProvisioningClassDetails[prv1.DetailNodeClaims]), ","); len(got) != 3 {
		t.Errorf("status names %v, want the 3 claims", got)
	}
	for i := range claims[:2] {
		setLaunched(t, &claims[i], true, "", "")
	}
	f.reconcile(t, poolName)
	pr = fresh(t, poolName)
	wantCondition(t, pr, prv1.ConditionProvisioned, metav1.ConditionFalse, provisioning.ReasonLaunching, "2 of 3 nodeclaims launched")
	setLaunched(t, &claims[2], true, "", "")
	f.reconcile(t, poolName)
	pr = fresh(t, poolName)
	wantCondition(t, pr, prv1.ConditionProvisioned, metav1.ConditionTrue, "", "all 3 nodeclaims launched")
	for _, c := range claims {
		if !f.cluster.Booked(c.Name) {
			t.Errorf("claim %s not booked", c.Name)
		}
	}
	f.clk.Step(provisioning.BookingWindow - time.Second)
	if res := f.reconcile(t, poolName); res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Errorf("requeue after %s, want the second left of the booking", res.RequeueAfter)
	}
	f.clk.Step(time.Second)
	if f.cluster.Booked(claims[0].Name) {
		t.Error("still booked once the window ran out")
	}
	f.reconcile(t, poolName)
	pr = fresh(t, poolName)
	wantCondition(t, pr, prv1.ConditionBookingExpired, metav1.ConditionTrue, "", "")
	wantCondition(t, pr, prv1.ConditionProvisioned, metav1.ConditionTrue, "", "")
	if n := len(requestClaims(t, key)); n != 3 {
		t.Errorf("%d claims after the booking, want the 3 kept (they are ordinary nodes now)", n)
	}
}

// Once every pod of the request is bound, the room is theirs: the booking
// is released before the window ends, and the status says so.
func TestBookingReleasedOnceConsumed(t *testing.T) {
	f, poolName, claims := provisioned(t, "atomic-consumed", 2)
	f.reconcile(t, poolName)
	if !f.cluster.Booked(claims[0].Name) {
		t.Fatal("not booked once Provisioned")
	}
	for i, c := range claims {
		p := controllertest.Pod(ns, fmt.Sprintf("%s-%d", poolName, i), "3")
		p.Annotations = map[string]string{prv1.AnnotationConsumeRequest: poolName}
		p.Spec.NodeName = c.Name + "-node"
		create(t, p)
		if i == 0 {
			f.reconcile(t, poolName)
			if !f.cluster.Booked(claims[0].Name) {
				t.Fatal("booking released with one pod of two bound")
			}
		}
	}
	f.reconcile(t, poolName)
	if f.cluster.Booked(claims[0].Name) || f.cluster.Booked(claims[1].Name) {
		t.Error("still booked once every pod is bound")
	}
	if pr := fresh(t, poolName); pr.Status.ProvisioningClassDetails[DetailConsumed] != "true" {
		t.Errorf("details %v, want %s", pr.Status.ProvisioningClassDetails, DetailConsumed)
	}
}

// A booked claim that goes away within the booking window revokes the
// capacity: CapacityRevoked, with the claim named.
func TestCapacityRevoked(t *testing.T) {
	f, poolName, claims := provisioned(t, "atomic-revoked", 1)
	if err := h.Direct.Delete(context.Background(), &claims[0]); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "cache sees the claim deleted", func() error {
		got := &nsv1.NodeClaim{}
		if err := h.Client.Get(context.Background(), types.NamespacedName{Name: claims[0].Name}, got); err == nil && got.DeletionTimestamp.IsZero() {
			return fmt.Errorf("not deleted yet")
		}
		return nil
	})
	f.reconcile(t, poolName)
	pr := fresh(t, poolName)
	wantCondition(t, pr, prv1.ConditionCapacityRevoked, metav1.ConditionTrue, "", claims[0].Name)
	wantCondition(t, pr, prv1.ConditionProvisioned, metav1.ConditionTrue, "", "")
}

// One claim of the set failing to launch rolls the whole set back and
// fails the request with the claim's reason.
func TestAtomicRollback(t *testing.T) {
	f, poolName, claims := launching(t, "atomic-fail", 3)
	setLaunched(t, &claims[0], true, "", "")
	setLaunched(t, &claims[1], false, "LaunchFailed", "InsufficientInstanceCapacity in every offering")
	f.reconcile(t, poolName)
	pr := fresh(t, poolName)
	wantCondition(t, pr, prv1.ConditionFailed, metav1.ConditionTrue, provisioning.ReasonLaunchFailed, "nodeclaim "+claims[1].Name+" did not launch")
	wantCondition(t, pr, prv1.ConditionProvisioned, metav1.ConditionFalse, provisioning.ReasonLaunchFailed, "rolled back")
	for _, c := range claims {
		got := &nsv1.NodeClaim{}
		err := h.Direct.Get(context.Background(), types.NamespacedName{Name: c.Name}, got)
		if err == nil && got.DeletionTimestamp.IsZero() {
			t.Errorf("claim %s kept after the rollback", c.Name)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if f.cluster.Booked(c.Name) {
			t.Errorf("claim %s booked", c.Name)
		}
	}
}

// Not every pod fits (the pool's node limit): nothing is created, the
// request says how many pods did not fit and is tried again, later each
// time; once the limit is raised the next try launches the whole set.
func TestAtomicNothingWhenSomeDoNotFit(t *testing.T) {
	s := suffix()
	poolName := "atomic-limit-" + s
	pool(t, poolName, 2)
	template(t, poolName, "3", nsv1.LabelNodePool, poolName)
	f := newFixture()
	request(t, poolName, prv1.ClassAtomicScaleUp, poolName, 3)
	for i, want := range []time.Duration{provisioning.RetryFirst, 2 * provisioning.RetryFirst} {
		if res := f.reconcile(t, poolName); res.RequeueAfter != want {
			t.Errorf("try %d: requeued after %s, want %s", i+1, res.RequeueAfter, want)
		}
		pr := fresh(t, poolName)
		wantCondition(t, pr, prv1.ConditionProvisioned, metav1.ConditionFalse, provisioning.ReasonNotFit, "1 of 3 pods do not fit")
		if c := meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionFailed); c != nil {
			t.Errorf("try %d: Failed %+v; a request that does not fit yet is tried again", i+1, c)
		}
		if n := len(requestClaims(t, ns+"/"+poolName)); n != 0 {
			t.Errorf("try %d: %d nodeclaims created for a request that does not fit", i+1, n)
		}
	}

	p := &nsv1.NodePool{}
	if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: poolName}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Limits = nsv1.Limits{nsv1.ResourceNodes: *resource.NewQuantity(3, resource.DecimalSI)}
	if err := h.Direct.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
	f.reconcile(t, poolName)
	pr := fresh(t, poolName)
	wantCondition(t, pr, prv1.ConditionProvisioned, metav1.ConditionFalse, provisioning.ReasonLaunching, "launching 3 nodeclaims")
	if n := len(requestClaims(t, ns+"/"+poolName)); n != 3 {
		t.Errorf("%d nodeclaims once the limit was raised, want 3", n)
	}
}

// The API server refuses what the upstream schema refuses.
func TestValidation(t *testing.T) {
	ctx := context.Background()
	s := suffix()
	tests := []struct {
		name string
		spec prv1.ProvisioningRequestSpec
		want string
	}{
		{name: "no pod sets", spec: prv1.ProvisioningRequestSpec{ProvisioningClassName: prv1.ClassCheckCapacity}, want: "spec.podSets"},
		{name: "zero count", spec: prv1.ProvisioningRequestSpec{ProvisioningClassName: prv1.ClassCheckCapacity,
			PodSets: []prv1.PodSet{{PodTemplateRef: prv1.Reference{Name: "t"}, Count: 0}}}, want: "count"},
		{name: "bad class name", spec: prv1.ProvisioningRequestSpec{ProvisioningClassName: "Not A Class",
			PodSets: []prv1.PodSet{{PodTemplateRef: prv1.Reference{Name: "t"}, Count: 1}}}, want: "provisioningClassName"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := &prv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("invalid-%s-%d", s, i)}, Spec: tt.spec}
			if err := h.Direct.Create(ctx, pr); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("create: %v, want an error naming %q", err, tt.want)
			}
		})
	}
	// The spec is immutable.
	pr := &prv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "immutable-" + s}, Spec: prv1.ProvisioningRequestSpec{
		ProvisioningClassName: prv1.ClassCheckCapacity, PodSets: []prv1.PodSet{{PodTemplateRef: prv1.Reference{Name: "t"}, Count: 1}}}}
	if err := h.Direct.Create(ctx, pr); err != nil {
		t.Fatal(err)
	}
	pr.Spec.PodSets[0].Count = 2
	if err := h.Direct.Update(ctx, pr); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("update: %v, want the spec refused as immutable", err)
	}
}
