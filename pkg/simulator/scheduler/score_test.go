package scheduler

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Upstream noderesources/least_allocated.go and resource_allocation.go:
// ((capacity − requested) × 100 / capacity) per resource, averaged, with
// requested including the 100m / 200Mi defaults for containers without
// requests.
func TestLeastAllocated(t *testing.T) {
	tests := []struct {
		name     string
		node     *corev1.Node
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     int64
	}{
		{
			// cpu (4000−2000)·100/4000 = 50, memory (10−5)·100/10 = 50.
			name:     "half of each left",
			node:     mkNode("n", alloc("cpu", "4", "memory", "10Gi")),
			existing: []*corev1.Pod{mkPod("e", req("cpu", "1", "memory", "2Gi"), on("n"))},
			pod:      mkPod("p", req("cpu", "1", "memory", "3Gi")),
			want:     50,
		},
		{
			// Upstream's "differently sized nodes" case: cpu 25, memory 50.
			name: "3000m/5000 on 4000m/10000",
			node: mkNode("n", alloc("cpu", "4", "memory", "10000")),
			pod:  mkPod("p", req("cpu", "3", "memory", "5000")),
			want: 37,
		},
		{
			name: "3000m/5000 on 6000m/10000",
			node: mkNode("n", alloc("cpu", "6", "memory", "10000")),
			pod:  mkPod("p", req("cpu", "3", "memory", "5000")),
			want: 50,
		},
		{
			// A best-effort pod counts as 100m and 200Mi: cpu 3900·100/4000 =
			// 97, memory (16384−200)·100/16384 = 98, mean 97.
			name: "best-effort pod uses the defaults",
			node: mkNode("n", alloc("cpu", "4", "memory", "16Gi")),
			pod:  mkPod("p"),
			want: 97,
		},
		{
			// The defaults apply per container: 2 × 100m on top of 1 cpu.
			name:     "defaults for the bound pod's containers too",
			node:     mkNode("n", alloc("cpu", "4", "memory", "16Gi")),
			existing: []*corev1.Pod{mkPod("e", container(), on("n"))},
			pod:      mkPod("p", req("cpu", "1", "memory", "8Gi")),
			// cpu 4000−(200+1000) → 70; memory 16384−(400+8192) → 47 (47.46); mean 58.
			want: 58,
		},
		{
			name: "over capacity scores 0 for that resource",
			node: mkNode("n", alloc("cpu", "1", "memory", "10Gi")),
			pod:  mkPod("p", req("cpu", "2", "memory", "5Gi")),
			want: 25,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cluster([]*corev1.Node{tt.node}, tt.existing...)
			if got := leastAllocated(s.newPodInfo(tt.pod), s.nodes["n"]); got != tt.want {
				t.Errorf("score = %d, want %d", got, tt.want)
			}
		})
	}
}

// NodeResourcesBalancedAllocation since v1.36 (kubernetes#135573): balance
// is (1 − |f_cpu − f_mem|/2) × 100 on actual requests, fractions capped at
// 1, and the score is 50 + (50 + balance with the pod − without it)/2.
func TestBalancedAllocation(t *testing.T) {
	tests := []struct {
		name     string
		node     *corev1.Node
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     int64
	}{
		// Empty node (balance 100), fractions 0.75 and 0.5 → 87: 50 + 37/2.
		{name: "unbalancing an empty node", node: mkNode("n", alloc("cpu", "4", "memory", "10000")), pod: mkPod("p", req("cpu", "3", "memory", "5000")), want: 68},
		{name: "keeping it balanced", node: mkNode("n", alloc("cpu", "6", "memory", "10000")), pod: mkPod("p", req("cpu", "3", "memory", "5000")), want: 75},
		// Fractions 1 (capped) and 0 → balance 50: the worst change.
		{name: "fraction capped at 1", node: mkNode("n", alloc("cpu", "4", "memory", "10000")), pod: mkPod("p", req("cpu", "8", "memory", "0")), want: 50},
		// Actual requests, not the defaults: cpu only, memory 0 → 87.
		{name: "no default for memory", node: mkNode("n", alloc("cpu", "4", "memory", "16Gi")), pod: mkPod("p", req("cpu", "1")), want: 68},
		// 0.5/0 (75) to 0.5/0.5 (100): 50 + 75/2.
		{
			name:     "rebalancing a cpu-heavy node",
			node:     mkNode("n", alloc("cpu", "4", "memory", "16Gi")),
			existing: []*corev1.Pod{mkPod("e", req("cpu", "2"), on("n"))},
			pod:      mkPod("p", req("memory", "8Gi")),
			want:     87,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cluster([]*corev1.Node{tt.node}, tt.existing...)
			if got := balancedAllocation(s.newPodInfo(tt.pod), s.nodes["n"]); got != tt.want {
				t.Errorf("score = %d, want %d", got, tt.want)
			}
		})
	}
}

// The framework's DefaultNormalizeScore.
func TestNormalize(t *testing.T) {
	tests := []struct {
		in      []int64
		reverse bool
		want    []int64
	}{
		{in: []int64{0, 1, 2}, reverse: true, want: []int64{100, 50, 0}},
		{in: []int64{0, 0}, reverse: true, want: []int64{100, 100}},
		{in: []int64{2, 4, 3}, want: []int64{50, 100, 75}},
		{in: []int64{0, 0}, want: []int64{0, 0}},
	}
	for _, tt := range tests {
		if got := normalize(slices.Clone(tt.in), tt.reverse); !slices.Equal(got, tt.want) {
			t.Errorf("normalize(%v, %v) = %v, want %v", tt.in, tt.reverse, got, tt.want)
		}
	}
}

// Upstream podtopologyspread/scoring.go: per node Σ count·ln(domains+2) +
// maxSkew − 1, rounded, then 100·(max + min − score)/max.
func TestSpreadScores(t *testing.T) {
	web := func(name, node string, extra ...podOpt) *corev1.Pod {
		return mkPod(name, append([]podOpt{labelsOf("app", "web", "pod-template-hash", "abc"), ownedBy("ReplicaSet", "web-abc"), on(node)}, extra...)...)
	}
	tests := []struct {
		name     string
		nodes    []*corev1.Node
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     []int64 // for the nodes in the order given, all feasible
	}{
		{
			// Two zones, ln 4 each: a and b score round(2·1.386) = 3, x 0.
			name:     "own ScheduleAnyway constraint",
			nodes:    []*corev1.Node{mkNode("a", zone("z1")), mkNode("b", zone("z1")), mkNode("x", zone("z2"))},
			existing: podsOn("a", 2),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, sel("foo", "bar"))),
			want:     []int64{0, 0, 100},
		},
		{
			// With its own constraints a node missing a key is not scored (0).
			name:     "own constraint ignores nodes without the key",
			nodes:    []*corev1.Node{mkNode("a", zone("z1")), mkNode("x", zone("z2")), mkNode("nozone")},
			existing: podsOn("a", 2),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, sel("foo", "bar"))),
			// a: round(2·ln 4) = 3, x: 0 → a 0, x 100, nozone 0.
			want: []int64{0, 100, 0},
		},
		{
			// System defaults (zone 5, hostname 3) for a ReplicaSet's pod.
			// Zone domains z1, z2 and "" (the zone-less node) → ln 5; three
			// hosts → ln 5. a: 2·1.609+4 + 2·1.609+2 = 12.44 → 12; x: 4+2 = 6;
			// nozone has no zone label, so only hostname: 2. Normalized with
			// min 2, max 12: 16, 66, 100. Pods of another ReplicaSet
			// (another pod-template-hash) do not count.
			name:  "system default constraints",
			nodes: []*corev1.Node{mkNode("a", zone("z1")), mkNode("x", zone("z2")), mkNode("nozone")},
			existing: []*corev1.Pod{
				web("w1", "a"), web("w2", "a"),
				mkPod("old", labelsOf("app", "web", "pod-template-hash", "old"), ownedBy("ReplicaSet", "web-old"), on("x")),
			},
			pod:  mkPod("p", labelsOf("app", "web", "pod-template-hash", "abc"), ownedBy("ReplicaSet", "web-abc")),
			want: []int64{16, 66, 100},
		},
		{
			name:     "no defaults for a pod without a controller",
			nodes:    []*corev1.Node{mkNode("a", zone("z1")), mkNode("x", zone("z2"))},
			existing: []*corev1.Pod{web("w1", "a")},
			pod:      mkPod("p", labelsOf("app", "web", "pod-template-hash", "abc")),
			want:     nil,
		},
		{
			// A StatefulSet's per-pod labels are not part of its selector.
			name:  "StatefulSet pods spread together",
			nodes: []*corev1.Node{mkNode("a", zone("z1")), mkNode("x", zone("z2"))},
			existing: []*corev1.Pod{mkPod("db-0", ownedBy("StatefulSet", "db"), on("a"),
				labelsOf("app", "db", "statefulset.kubernetes.io/pod-name", "db-0", "apps.kubernetes.io/pod-index", "0", "controller-revision-hash", "r1"))},
			pod: mkPod("db-1", ownedBy("StatefulSet", "db"),
				labelsOf("app", "db", "statefulset.kubernetes.io/pod-name", "db-1", "apps.kubernetes.io/pod-index", "1", "controller-revision-hash", "r2")),
			// ln 4 for both: a: 1.386+4 + 1.386+2 = 8.77 → 9; x: 6. → 66, 100.
			want: []int64{66, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cluster(tt.nodes, tt.existing...)
			var feasible []*nodeInfo
			for _, n := range tt.nodes {
				feasible = append(feasible, s.nodes[n.Name])
			}
			if got := s.spreadScores(s.newPodInfo(tt.pod), feasible); !slices.Equal(got, tt.want) {
				t.Errorf("scores = %v, want %v", got, tt.want)
			}
		})
	}
}

// Upstream interpodaffinity/scoring.go: weights summed per topology
// domain, min–max normalized over the feasible nodes.
func TestInterPodScores(t *testing.T) {
	nodes := []*corev1.Node{mkNode("a", zone("z1")), mkNode("b", zone("z1")), mkNode("x", zone("z2"))}
	zoneKey, host := corev1.LabelTopologyZone, corev1.LabelHostname
	tests := []struct {
		name     string
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     []int64 // a, b, x
	}{
		{
			name:     "preferred affinity to a zone",
			existing: []*corev1.Pod{mkPod("db", labelsOf("app", "db"), on("a"))},
			pod:      mkPod("p", preferredPodAffinity(10, zoneKey, sel("app", "db"))),
			want:     []int64{100, 100, 0},
		},
		{
			// Two matching pods in z1 (20) against anti-affinity 5 per pod on
			// host x (−5): raw 20, 20, −5.
			name: "preferred affinity and anti-affinity together",
			existing: []*corev1.Pod{
				mkPod("db1", labelsOf("app", "db"), on("a")), mkPod("db2", labelsOf("app", "db"), on("b")),
				mkPod("c1", labelsOf("app", "cache"), on("x")),
			},
			pod:  mkPod("p", preferredPodAffinity(10, zoneKey, sel("app", "db")), preferredPodAntiAffinity(5, host, sel("app", "cache"))),
			want: []int64{100, 100, 0},
		},
		{
			name:     "a bound pod's preferred anti-affinity repels the pod",
			existing: []*corev1.Pod{mkPod("db", labelsOf("app", "db"), on("a"), preferredPodAntiAffinity(5, host, sel("app", "web")))},
			pod:      mkPod("p", labelsOf("app", "web")),
			want:     []int64{0, 100, 100},
		},
		{
			// Required affinity of a bound pod counts with the hard weight 1.
			name:     "a bound pod's required affinity attracts the pod",
			existing: []*corev1.Pod{mkPod("db", labelsOf("app", "db"), on("x"), podAffinity(zoneKey, sel("app", "web")))},
			pod:      mkPod("p", labelsOf("app", "web")),
			want:     []int64{0, 0, 100},
		},
		{
			name:     "nothing relevant: skipped",
			existing: []*corev1.Pod{mkPod("db", labelsOf("app", "db"), on("x"))},
			pod:      mkPod("p", labelsOf("app", "web")),
			want:     nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cluster(nodes, tt.existing...)
			feasible := []*nodeInfo{s.nodes["a"], s.nodes["b"], s.nodes["x"]}
			if got := s.interPodScores(s.newPodInfo(tt.pod), feasible); !slices.Equal(got, tt.want) {
				t.Errorf("scores = %v, want %v", got, tt.want)
			}
		})
	}
}

// Whole cycles: the weighted scores decide, ties go to the first name.
func TestScheduleChoosesByScore(t *testing.T) {
	pref := func(weight int32, key, value string) podOpt {
		return affinity(func(a *corev1.Affinity) {
			a.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}},
			}}}
		})
	}
	tests := []struct {
		name     string
		nodes    []*corev1.Node
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     string
	}{
		{
			name:  "equal nodes: the first name",
			nodes: []*corev1.Node{mkNode("c"), mkNode("b"), mkNode("a")},
			pod:   mkPod("p", req("cpu", "1")),
			want:  "a",
		},
		{
			name:     "the less allocated node",
			nodes:    []*corev1.Node{mkNode("a"), mkNode("b")},
			existing: []*corev1.Pod{mkPod("e", req("cpu", "2", "memory", "8Gi"), on("a"))},
			pod:      mkPod("p", req("cpu", "1", "memory", "1Gi")),
			want:     "b",
		},
		{
			// TaintToleration weighs 3 × 100 against a few points of
			// LeastAllocated.
			name:     "PreferNoSchedule outweighs load",
			nodes:    []*corev1.Node{mkNode("a", taint("spot", "", corev1.TaintEffectPreferNoSchedule)), mkNode("b")},
			existing: []*corev1.Pod{mkPod("e", req("cpu", "2", "memory", "8Gi"), on("b"))},
			pod:      mkPod("p", req("cpu", "1", "memory", "1Gi")),
			want:     "b",
		},
		{
			name:     "preferred node affinity",
			nodes:    []*corev1.Node{mkNode("a", zone("z1")), mkNode("b", zone("z2"))},
			existing: []*corev1.Pod{mkPod("e", req("cpu", "2", "memory", "8Gi"), on("b"))},
			pod:      mkPod("p", req("cpu", "1", "memory", "1Gi"), pref(5, corev1.LabelTopologyZone, "z2")),
			want:     "b",
		},
		{
			name:     "a ReplicaSet's pods spread by default",
			nodes:    []*corev1.Node{mkNode("a"), mkNode("b")},
			existing: []*corev1.Pod{mkPod("w1", labelsOf("app", "web"), ownedBy("ReplicaSet", "web"), on("a"))},
			// Without spreading, a (lexically first, same load) would win.
			pod:  mkPod("w2", labelsOf("app", "web"), ownedBy("ReplicaSet", "web"), req("cpu", "10m")),
			want: "b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cluster(tt.nodes, tt.existing...).Schedule(tt.pod)
			if err != nil || got != tt.want {
				t.Errorf("Schedule = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
