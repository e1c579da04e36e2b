package scheduler

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cases follow upstream interpodaffinity/filtering.go: satisfyPodAffinity
// (with the first-pod rule), satisfyPodAntiAffinity and
// satisfyExistingPodsAntiAffinity, in that order.
func TestInterPodAffinityFilter(t *testing.T) {
	nodes := func() []*corev1.Node {
		return []*corev1.Node{
			mkNode("a", zone("z1")), mkNode("b", zone("z1")),
			mkNode("x", zone("z2")), mkNode("y", zone("z2")),
		}
	}
	zoneKey, host := corev1.LabelTopologyZone, corev1.LabelHostname
	pass, aff, anti, existing := "", reasonAffinity, reasonAntiAffinity, reasonExistingAntiAffin
	withNS := func(ns []string, nsSel *metav1.LabelSelector) func(*corev1.Affinity) {
		return func(a *corev1.Affinity) {
			t := &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
			t.Namespaces, t.NamespaceSelector = ns, nsSel
		}
	}
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		namespaces []*corev1.Namespace
		existing   []*corev1.Pod
		pod        *corev1.Pod
		want       map[string]string
	}{
		{
			name:     "affinity to a zone holding a match",
			existing: []*corev1.Pod{mkPod("db", labelsOf("app", "db"), on("a"))},
			pod:      mkPod("p", podAffinity(zoneKey, sel("app", "db"))),
			want:     map[string]string{"a": pass, "b": pass, "x": aff, "y": aff},
		},
		{
			name:     "affinity to a host holding a match",
			existing: []*corev1.Pod{mkPod("db", labelsOf("app", "db"), on("a"))},
			pod:      mkPod("p", podAffinity(host, sel("app", "db"))),
			want:     map[string]string{"a": pass, "b": aff, "x": aff, "y": aff},
		},
		{
			name: "first pod of a self-affine group goes anywhere",
			pod:  mkPod("p", labelsOf("app", "web"), podAffinity(zoneKey, sel("app", "web"))),
			want: map[string]string{"a": pass, "b": pass, "x": pass, "y": pass},
		},
		{
			name: "no match anywhere and the pod does not match itself",
			pod:  mkPod("p", labelsOf("app", "web"), podAffinity(zoneKey, sel("app", "db"))),
			want: map[string]string{"a": aff, "b": aff, "x": aff, "y": aff},
		},
		{
			name:     "once one member exists the rest follow it",
			existing: []*corev1.Pod{mkPod("w1", labelsOf("app", "web"), on("x"))},
			pod:      mkPod("p", labelsOf("app", "web"), podAffinity(host, sel("app", "web"))),
			want:     map[string]string{"a": aff, "b": aff, "x": pass, "y": aff},
		},
		{
			name:  "the first pod still needs the topology key",
			nodes: append(nodes(), mkNode("nozone")),
			pod:   mkPod("p", labelsOf("app", "web"), podAffinity(zoneKey, sel("app", "web"))),
			want:  map[string]string{"a": pass, "b": pass, "x": pass, "y": pass, "nozone": aff},
		},
		{
			// A pod counts for affinity only if it matches every term.
			name: "all terms must match one pod",
			existing: []*corev1.Pod{
				mkPod("db1", labelsOf("app", "db"), on("a")),
				mkPod("db2", labelsOf("app", "db", "tier", "backend"), on("x")),
			},
			pod:  mkPod("p", podAffinity(zoneKey, sel("app", "db")), podAffinity(host, sel("tier", "backend"))),
			want: map[string]string{"a": aff, "b": aff, "x": pass, "y": aff},
		},
		{
			name:     "anti-affinity per host",
			existing: []*corev1.Pod{mkPod("w1", labelsOf("app", "web"), on("a"))},
			pod:      mkPod("p", labelsOf("app", "web"), podAntiAffinity(host, sel("app", "web"))),
			want:     map[string]string{"a": anti, "b": pass, "x": pass, "y": pass},
		},
		{
			name:     "anti-affinity per zone, terminating pods included",
			existing: []*corev1.Pod{mkPod("w1", labelsOf("app", "web"), on("a"), terminating)},
			pod:      mkPod("p", labelsOf("app", "web"), podAntiAffinity(zoneKey, sel("app", "web"))),
			want:     map[string]string{"a": anti, "b": anti, "x": pass, "y": pass},
		},
		{
			// The bound pod's anti-affinity keeps the incoming pod out, though
			// the incoming pod has no rule of its own.
			name:     "existing pod's anti-affinity",
			existing: []*corev1.Pod{mkPod("db", labelsOf("app", "db"), on("x"), podAntiAffinity(zoneKey, sel("app", "web")))},
			pod:      mkPod("p", labelsOf("app", "web")),
			want:     map[string]string{"a": pass, "b": pass, "x": existing, "y": existing},
		},
		{
			// A term without namespaces applies to its own pod's namespace.
			name:     "existing pod's anti-affinity is namespaced",
			existing: []*corev1.Pod{mkPod("db", inNamespace("other"), labelsOf("app", "db"), on("x"), podAntiAffinity(zoneKey, sel("app", "web")))},
			pod:      mkPod("p", labelsOf("app", "web")),
			want:     map[string]string{"a": pass, "b": pass, "x": pass, "y": pass},
		},
		{
			name:     "affinity looks only in the pod's namespace by default",
			existing: []*corev1.Pod{mkPod("db", inNamespace("other"), labelsOf("app", "db"), on("a"))},
			pod:      mkPod("p", podAffinity(zoneKey, sel("app", "db"))),
			want:     map[string]string{"a": aff, "b": aff, "x": aff, "y": aff},
		},
		{
			name:     "affinity with an explicit namespace list",
			existing: []*corev1.Pod{mkPod("db", inNamespace("other"), labelsOf("app", "db"), on("a"))},
			pod:      mkPod("p", podAffinity(zoneKey, sel("app", "db")), affinity(withNS([]string{"other"}, nil))),
			want:     map[string]string{"a": pass, "b": pass, "x": aff, "y": aff},
		},
		{
			name:       "affinity with a namespaceSelector on namespace labels",
			namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"team": "data"}}}},
			existing:   []*corev1.Pod{mkPod("db", inNamespace("other"), labelsOf("app", "db"), on("x"))},
			pod:        mkPod("p", podAffinity(zoneKey, sel("app", "db")), affinity(withNS(nil, sel("team", "data")))),
			want:       map[string]string{"a": aff, "b": aff, "x": pass, "y": pass},
		},
		{
			name:     "an empty namespaceSelector means every namespace",
			existing: []*corev1.Pod{mkPod("db", inNamespace("other"), labelsOf("app", "db"), on("x"))},
			pod:      mkPod("p", podAffinity(zoneKey, sel("app", "db")), affinity(withNS(nil, &metav1.LabelSelector{}))),
			want:     map[string]string{"a": aff, "b": aff, "x": pass, "y": pass},
		},
		{
			// Without namespace objects, the name label the API server sets
			// is still there to select on.
			name:     "namespaceSelector on the metadata.name label",
			existing: []*corev1.Pod{mkPod("db", inNamespace("other"), labelsOf("app", "db"), on("x"))},
			pod:      mkPod("p", podAffinity(zoneKey, sel("app", "db")), affinity(withNS(nil, sel(corev1.LabelMetadataName, "other")))),
			want:     map[string]string{"a": aff, "b": aff, "x": pass, "y": pass},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := tt.nodes
			if ns == nil {
				ns = nodes()
			}
			s := cluster(ns)
			for _, n := range tt.namespaces {
				s.UpsertNamespace(n)
			}
			for _, p := range tt.existing {
				s.UpsertPod(p)
			}
			got := filterAll(s, tt.pod)
			if !maps.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// The counters behind the filters follow pods coming and going: a counter
// created before, or after, the pods it counts gives the same answer.
func TestCountersFollowPods(t *testing.T) {
	s := cluster([]*corev1.Node{mkNode("a", zone("z1")), mkNode("x", zone("z2"))})
	p := mkPod("p", labelsOf("app", "web"), podAntiAffinity(corev1.LabelHostname, sel("app", "web")))
	check := func(want map[string]string) {
		t.Helper()
		if got := filterAll(s, p); !maps.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	check(map[string]string{"a": "", "x": ""}) // the counter now exists
	w1 := mkPod("w1", labelsOf("app", "web"), on("a"))
	s.UpsertPod(w1)
	check(map[string]string{"a": reasonAntiAffinity, "x": ""})
	relabelled := mkPod("w1", labelsOf("app", "db"), on("a"))
	s.UpsertPod(relabelled)
	check(map[string]string{"a": "", "x": ""})
	s.UpsertPod(w1)
	s.DeletePod(w1)
	check(map[string]string{"a": "", "x": ""})
	// Pods bound to a node the cache does not know yet count once it appears.
	s.UpsertPod(mkPod("w2", labelsOf("app", "web"), on("late")))
	check(map[string]string{"a": "", "x": ""})
	s.UpsertNode(mkNode("late", zone("z1")))
	check(map[string]string{"a": "", "x": "", "late": reasonAntiAffinity})
}

// Counters no cycle has asked for in a while are dropped, and a rule seen
// again is counted afresh from the bound pods.
func TestIdleCountersDropped(t *testing.T) {
	s := cluster([]*corev1.Node{mkNode("a"), mkNode("x")}, mkPod("w1", labelsOf("app", "web"), on("a")))
	anti := mkPod("p", labelsOf("app", "web"), podAntiAffinity(corev1.LabelHostname, sel("app", "web")))
	if got := filterAll(s, anti); got["a"] != reasonAntiAffinity {
		t.Fatalf("before: %v", got)
	}
	n := len(s.counters.bySig)
	for i := 0; i < 2*counterIdleCycles; i++ {
		if _, err := s.Schedule(mkPod("plain")); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.counters.bySig) >= n {
		t.Fatalf("%d counters kept, had %d", len(s.counters.bySig), n)
	}
	s.DeletePod(mkPod("w1"))
	s.UpsertPod(mkPod("w2", labelsOf("app", "web"), on("x")))
	if got := filterAll(s, anti); got["a"] != "" || got["x"] != reasonAntiAffinity {
		t.Fatalf("after: %v", got)
	}
}
