package conformance

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/simulator/scheduler"
	"github.com/nodesmith/nodesmith/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// Without TaintNodesByCondition admission the nodes are not born with
	// the not-ready taint that no node lifecycle controller would remove
	// here; the model sees exactly the taints the nodes carry.
	opts := testenv.Options{APIServerFlags: map[string][]string{
		"disable-admission-plugins": {"ServiceAccount", "TaintNodesByCondition"},
	}}
	os.Exit(testenv.Run(m, opts, func(e *testenv.Env) error { env = e; return nil }))
}

// TestAgainstKubeScheduler feeds the same nodes and the same pods, one at a
// time, to kube-scheduler and to the model. A pod must land on one of the
// nodes the model ranks first (kube-scheduler breaks ties at random), and
// a pod that fits nowhere must get the model's message (kube-scheduler
// adds a "preemption:" part the model does not produce).
func TestAgainstKubeScheduler(t *testing.T) {
	ctx := t.Context()
	c := env.Client
	sched, err := env.StartScheduler(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-scheduler log:\n%s", sched.LogTail(40))
		}
	})
	model := scheduler.New()
	ns := "conformance"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes() {
		if err := c.Create(ctx, n); err != nil {
			t.Fatalf("creating node %s: %v", n.Name, err)
		}
		model.UpsertNode(n)
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-abc"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: new(int32),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "abc"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "pod-template-hash": "abc"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "web:1"}}},
			},
		},
	}
	if err := c.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}

	// The warm-up pod can only go to n6; a second one waits for n7 (cordoned,
	// so it must tolerate that). Once both are bound, kube-scheduler's cache
	// holds every node.
	warm := pod(ns, "warm-up", nodeSelector(corev1.LabelHostname, "n6"), tolerate("dedicated"))
	if _, msg := run(ctx, t, c, warm); msg != "" {
		t.Fatalf("warm-up pod: %s", msg)
	}
	model.UpsertPod(get(ctx, t, c, warm))
	warm7 := pod(ns, "warm-up-7", nodeSelector(corev1.LabelHostname, "n7"), tolerate(corev1.TaintNodeUnschedulable))
	if _, msg := run(ctx, t, c, warm7); msg != "" {
		t.Fatalf("warm-up pod: %s", msg)
	}
	model.UpsertPod(get(ctx, t, c, warm7))

	placed := 0
	for _, p := range pods(ns, rs) {
		if err := c.Create(ctx, p); err != nil {
			t.Fatalf("creating %s: %v", p.Name, err)
		}
		ranking, modelErr := model.Rank(p)
		node, msg := run(ctx, t, c, p)
		t.Logf("%s: kube-scheduler %q; model %v %v", p.Name, node, ranking, modelErr)
		switch {
		case node == "" && modelErr == nil:
			t.Fatalf("%s: kube-scheduler: %q; model ranks %v", p.Name, msg, ranking)
		case node == "":
			if real := strings.SplitN(msg, " preemption:", 2)[0]; real != modelErr.Error() {
				t.Errorf("%s: messages differ\nkube-scheduler: %s\nmodel:          %s", p.Name, real, modelErr)
			}
			if err := c.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
		case modelErr != nil:
			t.Fatalf("%s: kube-scheduler bound it to %s; model: %v", p.Name, node, modelErr)
		default:
			var top []string
			for _, r := range ranking {
				if r.Score == ranking[0].Score {
					top = append(top, r.Node)
				}
			}
			if !contains(top, node) {
				t.Errorf("%s: kube-scheduler chose %s, the model's best are %v (ranking %v)", p.Name, node, top, ranking)
			}
			// Follow the real binding so that both go on from the same state.
			model.UpsertPod(get(ctx, t, c, p))
			placed++
		}
	}
	if placed < 30 {
		t.Fatalf("only %d pods placed: the sequence no longer exercises the scores", placed)
	}
}

// run waits until kube-scheduler has bound the pod (its node) or marked it
// unschedulable (the condition's message).
func run(ctx context.Context, t *testing.T, c client.Client, p *corev1.Pod) (string, string) {
	t.Helper()
	if p.ResourceVersion == "" {
		if err := c.Create(ctx, p); err != nil {
			t.Fatalf("creating %s: %v", p.Name, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		cur := get(ctx, t, c, p)
		if cur.Spec.NodeName != "" {
			return cur.Spec.NodeName, ""
		}
		for _, cond := range cur.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return "", cond.Message
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: neither bound nor unschedulable after a minute", p.Name)
	return "", ""
}

func get(ctx context.Context, t *testing.T, c client.Client, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	cur := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
		t.Fatalf("getting %s: %v", p.Name, err)
	}
	return cur
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// nodes: seven Ready nodes in three zones, all of different sizes so that
// exact score ties are rare, one PreferNoSchedule-tainted, one
// NoSchedule-tainted and one cordoned.
func nodes() []*corev1.Node {
	type spec struct {
		name, zone, cpu, mem string
		taint                *corev1.Taint
		cordoned             bool
	}
	specs := []spec{
		{"n1", "z1", "4", "16Gi", nil, false},
		{"n2", "z1", "8", "24Gi", nil, false},
		{"n3", "z2", "6", "32Gi", nil, false},
		{"n4", "z2", "12", "20Gi", &corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}, false},
		{"n5", "z3", "10", "40Gi", nil, false},
		{"n6", "z3", "16", "48Gi", &corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, false},
		{"n7", "z1", "5", "12Gi", nil, true},
	}
	var out []*corev1.Node
	for _, s := range specs {
		rl := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(s.cpu),
			corev1.ResourceMemory: resource.MustParse(s.mem),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{
				corev1.LabelHostname: s.name, corev1.LabelTopologyZone: s.zone,
			}},
			Status: corev1.NodeStatus{
				Capacity: rl, Allocatable: rl,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			},
		}
		if s.taint != nil {
			n.Spec.Taints = []corev1.Taint{*s.taint}
		}
		n.Spec.Unschedulable = s.cordoned
		out = append(out, n)
	}
	return out
}

type podOpt func(*corev1.Pod)

func pod(ns, name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "app:1"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func req(cpu, mem string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}
	}
}

func labels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		for i := 0; i < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func nodeSelector(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{k: v} }
}

func tolerate(key string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

func term(key, app string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
}

// pods is the sequence: every rule the model implements, in an order where
// earlier pods shape later decisions.
func pods(ns string, rs *appsv1.ReplicaSet) []*corev1.Pod {
	var out []*corev1.Pod
	add := func(name string, opts ...podOpt) { out = append(out, pod(ns, name, opts...)) }
	sizes := [][2]string{{"500m", "1Gi"}, {"1", "3Gi"}, {"250m", "4Gi"}, {"1500m", "512Mi"}, {"2", "2Gi"}, {"750m", "6Gi"}}
	for i, s := range sizes {
		add(fmt.Sprintf("plain-%d", i), req(s[0], s[1]))
	}
	yes := true
	owned := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
	}
	for i := 0; i < 7; i++ {
		add(fmt.Sprintf("web-%d", i), labels("app", "web", "pod-template-hash", "abc"), owned, req("300m", "700Mi"))
	}
	spread := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "zs"}},
		}}
	}
	for i := 0; i < 5; i++ {
		add(fmt.Sprintf("zs-%d", i), labels("app", "zs"), spread, req("400m", "1Gi"))
	}
	anti := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(corev1.LabelHostname, "aa")},
		}}
	}
	for i := 0; i < 6; i++ { // one more than the untainted nodes: the last fits nowhere
		add(fmt.Sprintf("aa-%d", i), labels("app", "aa"), anti, req("200m", "256Mi"))
	}
	near := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 80, PodAffinityTerm: term(corev1.LabelTopologyZone, "zs")}},
		}}
	}
	for i := 0; i < 3; i++ {
		add(fmt.Sprintf("near-%d", i), labels("app", "near"), near, req("600m", "1Gi"))
	}
	for i := 0; i < 2; i++ {
		add(fmt.Sprintf("pinned-%d", i), nodeSelector(corev1.LabelTopologyZone, "z2"), req("1", "1Gi"))
		add(fmt.Sprintf("gpu-%d", i), tolerate("dedicated"), req("3", "8Gi"))
		add(fmt.Sprintf("empty-%d", i))
	}
	add("too-big", req("20", "1Gi"))
	add("no-such-zone", nodeSelector(corev1.LabelTopologyZone, "z9"))
	rack := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "example.com/rack", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rack"}},
		}}
	}
	add("no-rack-label", labels("app", "rack"), rack)
	port := func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9000, HostPort: 9000}}
	}
	for i := 0; i < 6; i++ { // the sixth finds every schedulable node's port taken
		add(fmt.Sprintf("hp-%d", i), port, req("100m", "128Mi"))
	}
	needsDB := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(corev1.LabelTopologyZone, "db")},
		}}
	}
	add("needs-db", labels("app", "client"), needsDB)
	for i, s := range [][2]string{{"300m", "1Gi"}, {"700m", "2Gi"}, {"1200m", "768Mi"}, {"100m", "3Gi"}} {
		add(fmt.Sprintf("late-%d", i), req(s[0], s[1]))
	}
	return out
}
