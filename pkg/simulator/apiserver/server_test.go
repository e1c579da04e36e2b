package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func newServer(t testing.TB) (*Server, client.Client, *clocktesting.FakeClock) {
	t.Helper()
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	if err := nsv1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0)
	s := New(sch, clk, 1)
	return s, s.Client(), clk
}

func pod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}},
	}
}

func claim(name string) *nsv1.NodeClaim {
	return &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nsv1.LabelNodePool: "default"}}}
}

func TestCreateGetList(t *testing.T) {
	ctx := context.Background()
	_, c, _ := newServer(t)
	for _, n := range []string{"b", "a", "c"} {
		if err := c.Create(ctx, pod(n, "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, pod("a", "")); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create of a: %v, want AlreadyExists", err)
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, got); err != nil {
		t.Fatal(err)
	}
	if got.UID == "" || got.ResourceVersion == "" || got.Generation != 1 || !got.CreationTimestamp.Time.Equal(t0) {
		t.Fatalf("server fields not set: uid %q rv %q gen %d created %s", got.UID, got.ResourceVersion, got.Generation, got.CreationTimestamp)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "zz"}, got); !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing pod: %v, want NotFound", err)
	}
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	if fmt.Sprint(names) != "[a b c]" {
		t.Fatalf("list order %v, want [a b c]", names)
	}
	if err := c.List(ctx, &list, client.MatchingLabels{"app": "other"}); err != nil || len(list.Items) != 0 {
		t.Fatalf("label selector: %d items, %v", len(list.Items), err)
	}
	// A copy from List is the caller's.
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	list.Items[0].Labels["app"] = "mutated"
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, got); err != nil || got.Labels["app"] != "web" {
		t.Fatalf("mutating a listed copy reached the store: %v %v", got.Labels, err)
	}
}

func TestGenerateNameIsRepeatable(t *testing.T) {
	names := func() []string {
		_, c, _ := newServer(t)
		var out []string
		for i := 0; i < 3; i++ {
			cl := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{GenerateName: "default-"}}
			if err := c.Create(context.Background(), cl); err != nil {
				t.Fatal(err)
			}
			out = append(out, cl.Name)
		}
		return out
	}
	a, b := names(), names()
	if fmt.Sprint(a) != fmt.Sprint(b) || a[0] == a[1] || len(a[0]) != len("default-")+5 {
		t.Fatalf("generated names %v and %v", a, b)
	}
}

func TestUpdateSemantics(t *testing.T) {
	ctx := context.Background()
	_, c, _ := newServer(t)
	cl := claim("c1")
	cl.Status.ProviderID = "aws:///z/i-1" // dropped: status comes only through the subresource
	if err := c.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if cl.Status.ProviderID != "" {
		t.Fatalf("create kept status %q", cl.Status.ProviderID)
	}
	stale := cl.DeepCopy()

	cl.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	cl.Status.NodeName = "ignored"
	if err := c.Update(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if cl.Generation != 2 || cl.Status.NodeName != "" {
		t.Fatalf("after a spec update: generation %d (want 2), status.nodeName %q (want empty)", cl.Generation, cl.Status.NodeName)
	}
	stale.Labels["x"] = "y"
	if err := c.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("update from a stale copy: %v, want Conflict", err)
	}

	cl.Status.NodeName = "n1"
	cl.Spec.Taints = nil // ignored by the status subresource
	if err := c.Status().Update(ctx, cl); err != nil {
		t.Fatal(err)
	}
	got := &nsv1.NodeClaim{}
	_ = c.Get(ctx, client.ObjectKey{Name: "c1"}, got)
	if got.Status.NodeName != "n1" || len(got.Spec.Taints) != 1 || got.Generation != 2 {
		t.Fatalf("status update: nodeName %q taints %d generation %d", got.Status.NodeName, len(got.Spec.Taints), got.Generation)
	}
}

func TestMergePatchAndOptimisticLock(t *testing.T) {
	ctx := context.Background()
	_, c, _ := newServer(t)
	cl := claim("c1")
	if err := c.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	old := cl.DeepCopy()
	base := cl.DeepCopy()
	cl.Labels["zone"] = "a"
	if err := c.Patch(ctx, cl, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	// A patch built on the old copy, with the lock, conflicts; without it applies.
	locked := old.DeepCopy()
	locked.Finalizers = []string{"f"}
	if err := c.Patch(ctx, locked, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(err) {
		t.Fatalf("locked patch over a changed object: %v, want Conflict", err)
	}
	unlocked := old.DeepCopy()
	unlocked.Finalizers = []string{"f"}
	if err := c.Patch(ctx, unlocked, client.MergeFrom(old)); err != nil {
		t.Fatal(err)
	}
	if unlocked.Labels["zone"] != "a" || len(unlocked.Finalizers) != 1 {
		t.Fatalf("the patch result lost a change: labels %v finalizers %v", unlocked.Labels, unlocked.Finalizers)
	}
	// A status patch changes status only.
	sbase := unlocked.DeepCopy()
	unlocked.Status.InstanceType = "m5.large"
	unlocked.Labels["dropped"] = "yes"
	if err := c.Status().Patch(ctx, unlocked, client.MergeFrom(sbase)); err != nil {
		t.Fatal(err)
	}
	got := &nsv1.NodeClaim{}
	_ = c.Get(ctx, client.ObjectKey{Name: "c1"}, got)
	if got.Status.InstanceType != "m5.large" || got.Labels["dropped"] != "" {
		t.Fatalf("status patch: instance type %q, labels %v", got.Status.InstanceType, got.Labels)
	}
}

func TestDeleteWithFinalizers(t *testing.T) {
	ctx := context.Background()
	s, c, _ := newServer(t)
	var changes []string
	s.Watch(func(ch Change) {
		switch {
		case ch.Old == nil:
			changes = append(changes, "create "+ch.New.GetName())
		case ch.New == nil:
			changes = append(changes, "gone "+ch.Old.GetName())
		default:
			changes = append(changes, "update "+ch.New.GetName())
		}
	})
	cl := claim("c1")
	cl.Finalizers = []string{nsv1.TerminationFinalizer}
	if err := c.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "c1"}, cl); err != nil || cl.DeletionTimestamp == nil {
		t.Fatalf("deleted claim with a finalizer: %v, deletionTimestamp %v", err, cl.DeletionTimestamp)
	}
	if err := c.Delete(ctx, cl); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	base := cl.DeepCopy()
	cl.Finalizers = nil
	if err := c.Patch(ctx, cl, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "c1"}, cl); !apierrors.IsNotFound(err) {
		t.Fatalf("claim after its last finalizer went: %v, want NotFound", err)
	}
	if fmt.Sprint(changes) != "[create c1 update c1 gone c1]" {
		t.Fatalf("changes %v", changes)
	}
}

func TestPodDeletionWaitsForKubelet(t *testing.T) {
	ctx := context.Background()
	_, c, _ := newServer(t)
	unbound, bound := pod("pending", ""), pod("running", "n1")
	grace := int64(45)
	bound.Spec.TerminationGracePeriodSeconds = &grace
	for _, p := range []*corev1.Pod{unbound, bound} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(unbound), unbound); !apierrors.IsNotFound(err) {
		t.Fatalf("an unbound pod is deleted at once: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(bound), bound); err != nil || bound.DeletionTimestamp == nil ||
		bound.DeletionGracePeriodSeconds == nil || *bound.DeletionGracePeriodSeconds != 45 {
		t.Fatalf("a bound pod waits for its kubelet with its grace period: %v %v %v", err, bound.DeletionTimestamp, bound.DeletionGracePeriodSeconds)
	}
	if err := c.Delete(ctx, bound, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(bound), bound); !apierrors.IsNotFound(err) {
		t.Fatalf("after the kubelet's delete with grace 0: %v, want NotFound", err)
	}
}

func TestEvictionAndBinding(t *testing.T) {
	ctx := context.Background()
	s, c, _ := newServer(t)
	p := pod("p", "")
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := c.SubResource("binding").Create(ctx, p, &corev1.Binding{Target: corev1.ObjectReference{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.SubResource("binding").Create(ctx, p, &corev1.Binding{Target: corev1.ObjectReference{Name: "n2"}}); !apierrors.IsConflict(err) {
		t.Fatalf("second binding: %v, want Conflict", err)
	}
	_ = c.Get(ctx, client.ObjectKeyFromObject(p), p)
	if p.Spec.NodeName != "n1" || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("bound pod: node %q conditions %v", p.Spec.NodeName, p.Status.Conditions)
	}
	refuse := true
	s.SetEviction(func(*corev1.Pod) error {
		if refuse {
			return apierrors.NewTooManyRequests("the disruption budget allows no eviction", 5)
		}
		return nil
	})
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	if err := c.SubResource("eviction").Create(ctx, p, ev); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("refused eviction: %v, want TooManyRequests", err)
	}
	refuse = false
	if err := c.SubResource("eviction").Create(ctx, p, ev); err != nil {
		t.Fatal(err)
	}
	_ = c.Get(ctx, client.ObjectKeyFromObject(p), p)
	if p.DeletionTimestamp == nil {
		t.Fatal("an allowed eviction deletes the pod gracefully")
	}
}

func TestFieldIndex(t *testing.T) {
	ctx := context.Background()
	s, c, _ := newServer(t)
	if err := s.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if err := c.Create(ctx, pod(fmt.Sprint("p", i), fmt.Sprint("n", i%2))); err != nil {
			t.Fatal(err)
		}
	}
	var list corev1.PodList
	if err := c.List(ctx, &list, client.MatchingFields{"spec.nodeName": "n1"}); err != nil || len(list.Items) != 3 {
		t.Fatalf("pods on n1: %d, %v", len(list.Items), err)
	}
	if err := c.Delete(ctx, &list.Items[0], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &list, client.MatchingFields{"spec.nodeName": "n1"}); err != nil || len(list.Items) != 2 {
		t.Fatalf("pods on n1 after a deletion: %d, %v", len(list.Items), err)
	}
	if err := c.List(ctx, &list, client.MatchingFields{"status.phase": "Running"}); err == nil {
		t.Fatal("a field selector without an index must be refused, as the cache refuses it")
	}
}

// BenchmarkPods measures what ruled out controller-runtime's fake client
// (3.5 ms per create, 0.5 s per 10,000-pod list, 4.7 ms per get and status
// patch on this machine).
func BenchmarkPods(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		_, c, _ := newServer(b)
		start := time.Now()
		for j := 0; j < 10000; j++ {
			if err := c.Create(ctx, pod(fmt.Sprint("p", j), fmt.Sprint("n", j%100))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/10000, "µs/create")
		start = time.Now()
		var list corev1.PodList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/list-10k-unsafe")
		start = time.Now()
		if err := c.List(ctx, &list); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/list-10k")
		start = time.Now()
		for j := 0; j < 1000; j++ {
			p := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: fmt.Sprint("p", j)}, p); err != nil {
				b.Fatal(err)
			}
			base := p.DeepCopy()
			p.Status.Phase = corev1.PodRunning
			if err := c.Status().Patch(ctx, p, client.MergeFrom(base)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "µs/get+patch")
	}
}

// A Get with client.UnsafeDisableDeepCopy reads the stored object's maps,
// as the cache's does; a plain Get reads a copy.
func TestGetUnsafeDisableDeepCopy(t *testing.T) {
	ctx := context.Background()
	_, c, _ := newServer(t)
	if err := c.Create(ctx, pod("p", "n1")); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "default", Name: "p"}
	shared, copied, again := &corev1.Pod{}, &corev1.Pod{}, &corev1.Pod{}
	if err := c.Get(ctx, key, shared, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, copied); err != nil {
		t.Fatal(err)
	}
	if shared.Name != "p" || shared.Spec.NodeName != "n1" || shared.ResourceVersion != copied.ResourceVersion {
		t.Fatalf("unsafe get = %s on %q at %s; want p on n1 at %s", shared.Name, shared.Spec.NodeName, shared.ResourceVersion, copied.ResourceVersion)
	}
	copied.Labels["probe"] = "copy"
	shared.Labels["probe"] = "shared"
	if err := c.Get(ctx, key, again, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if again.Labels["probe"] != "shared" {
		t.Fatalf("the unsafe get's labels are not the store's: a second read sees %q", again.Labels["probe"])
	}
}

// A merge patch applied field by field gives the object the whole-object
// patch gives (the store's objects hold what JSON round-trips: times in
// seconds, canonical quantities), errors included.
func TestMergePatchByFieldIsTheWholeObjectPatch(t *testing.T) {
	ts := metav1.NewTime(t0)
	p := pod("p", "n1")
	p.UID, p.ResourceVersion, p.CreationTimestamp = "u1", "7", ts
	p.Annotations = map[string]string{"a": "1", "b": "2"}
	p.Finalizers = []string{"f"}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "t", Operator: corev1.TolerationOpExists}}
	p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"a.local"}}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ts}}
	for _, patch := range []string{
		`{"metadata":{"annotations":null},"spec":{"nodeSelector":{"a":"b","c":null}}}`,
		`{"spec":{"securityContext":{"runAsUser":5,"runAsGroup":null}}}`,
		`{"spec":{"dnsConfig":{"nameservers":["1.1.1.1"]}}}`,
		`{"spec":{"dnsConfig":{"searches":null,"options":[{"name":"ndots"}]}}}`,
		`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"2"}}}],"overhead":{"cpu":"1"}}}`,
		`{"spec":{"priority":null,"terminationGracePeriodSeconds":3}}`,
		`{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}}`,
		`{"status":{"Phase":"Failed"}}`,
		`{"status":{"startTime":"2026-01-05T10:00:00Z","conditions":[{"type":"Ready","status":"True","lastTransitionTime":null}]}}`,
		`{"metadata":{"creationTimestamp":null,"deletionGracePeriodSeconds":5,"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"n","uid":"u"}]}}`,
		`{"metadata":{"creationTimestamp":{"x":1}}}`,
		`{"spec":{"nodeSelector":"x"}}`,
		`{"metadata":{"resourceVersion":"7"},"status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False"}]}}`,
		`{"metadata":{"labels":{"app":null,"tier":"web"},"annotations":{"b":null}},"spec":{"nodeName":"n2"}}`,
		`{"metadata":{"finalizers":null,"resourceVersion":"3"}}`,
		`{"spec":{"containers":[{"name":"d","image":"x"}],"tolerations":null}}`,
		`{"status":null}`,
		`{"status":{"hostIP":"10.0.0.1","podIPs":[{"ip":"10.1.0.1"}]}}`,
		`{"kind":"Pod","metadata":{"name":"p"}}`,
		`{"unknown":{"x":1},"status":{"phase":"Succeeded"}}`,
		`{}`,
		`{"status":"Running"}`,
		`{"metadata":{"labels":["x"]}}`,
		`null`,
	} {
		byField, errField := mergePatch(p, []byte(patch))
		whole, errWhole := wholePatch(p, func(doc []byte) ([]byte, error) { return jsonpatch.MergePatch(doc, []byte(patch)) })
		if (errField == nil) != (errWhole == nil) {
			t.Errorf("%s: error %v by field, %v whole", patch, errField, errWhole)
			continue
		}
		if errField == nil && !equality.Semantic.DeepEqual(byField, whole) {
			t.Errorf("%s:\nby field %+v\nwhole    %+v", patch, byField, whole)
		}
	}
	// A status patch with its lock is walked field by field, not merged whole.
	if ok, err := mergeStruct(reflect.ValueOf(p.DeepCopy()).Elem(), []byte(`{"metadata":{"resourceVersion":"7"},"status":{"phase":"Failed"}}`)); !ok || err != nil {
		t.Errorf("a status patch was not walked: %v %v", ok, err)
	}
	if p.Status.Phase != corev1.PodRunning || p.Labels["app"] != "web" || p.Spec.NodeName != "n1" {
		t.Fatalf("the stored object was changed: %+v", p)
	}
}
