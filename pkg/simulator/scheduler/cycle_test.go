package scheduler

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Upstream schedule_one.go numFeasibleNodesToFind with the adaptive
// percentage (50 − nodes/125, at least 5%, at least 100 nodes).
func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		nodes      int
		percentage int32
		want       int
	}{
		{nodes: 10, want: 10},
		{nodes: 99, want: 99},
		{nodes: 100, want: 100},
		{nodes: 200, want: 100}, // 49% = 98, raised to 100
		{nodes: 1000, want: 420},
		{nodes: 5000, want: 500},
		{nodes: 6000, want: 300}, // floor of 5%
		{nodes: 1000, percentage: 100, want: 1000},
		{nodes: 1000, percentage: 20, want: 200},
		{nodes: 50, percentage: 20, want: 50},
	}
	for _, tt := range tests {
		s := New()
		s.SetPercentageOfNodesToScore(tt.percentage)
		if got := s.numFeasibleNodesToFind(tt.nodes); got != tt.want {
			t.Errorf("nodes %d, percentage %d: %d, want %d", tt.nodes, tt.percentage, got, tt.want)
		}
	}
}

// The snapshot's node order interleaves zones in the order they first
// appeared (upstream backend/cache/node_tree.go).
func TestNodeOrder(t *testing.T) {
	s := cluster([]*corev1.Node{
		mkNode("a1", zone("z1")), mkNode("a2", zone("z1")), mkNode("a3", zone("z1")),
		mkNode("b1", zone("z2")), mkNode("c1", zone("z3")), mkNode("b2", zone("z2")),
	})
	names := func() []string {
		var out []string
		for _, ni := range s.nodeList() {
			out = append(out, ni.name)
		}
		return out
	}
	if got, want := names(), []string{"a1", "b1", "c1", "a2", "b2", "a3"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	s.DeleteNode("c1")
	s.UpsertNode(mkNode("a2", zone("z2"))) // moves to the end of z2
	if got, want := names(), []string{"a1", "b1", "a3", "b2", "a2"}; !slices.Equal(got, want) {
		t.Fatalf("after changes %v, want %v", got, want)
	}
}

// With 100 nodes or more the scheduler scores only the first feasible ones
// it finds, starting where the previous pod stopped.
func TestPartialScoringRotates(t *testing.T) {
	var nodes []*corev1.Node
	for i := 0; i < 150; i++ {
		var opts []nodeOpt
		if i < 5 {
			opts = append(opts, taint("no", "", corev1.TaintEffectNoSchedule))
		}
		nodes = append(nodes, mkNode(fmt.Sprintf("n%03d", i), opts...))
	}
	s := cluster(nodes)
	// 150 nodes → look for 100 feasible: n000–n004 fail, n005–n104 fit.
	got, err := s.Schedule(mkPod("p1"))
	if err != nil || got != "n005" || s.nextStart != 105 {
		t.Fatalf("first cycle: %q %v, next start %d; want n005, 105", got, err, s.nextStart)
	}
	// The next cycle starts at n105: n105–n149 then n000–n059, of which
	// n005 is the lowest name that fits.
	got, _ = s.Schedule(mkPod("p2"))
	if got != "n005" || s.nextStart != 60 {
		t.Fatalf("second cycle: %q, next start %d; want n005, 60", got, s.nextStart)
	}
	// A third starting at n060 sees n060–n149 and n000–n014: n005 again; but
	// make n005 busy and the lowest other name, n006, wins.
	s.UpsertPod(mkPod("busy", req("cpu", "1"), on("n005")))
	got, _ = s.Schedule(mkPod("p3"))
	if got != "n006" {
		t.Fatalf("third cycle: %q, want n006", got)
	}
	// Scoring every node would find the emptiest node anywhere.
	s.SetPercentageOfNodesToScore(100)
	for i := 6; i < 150; i++ {
		if i != 140 {
			s.UpsertPod(mkPod(fmt.Sprintf("fill%d", i), req("cpu", "1"), on(fmt.Sprintf("n%03d", i))))
		}
	}
	if got, _ = s.Schedule(mkPod("p4")); got != "n140" {
		t.Fatalf("all nodes scored: %q, want n140", got)
	}
}

// A pod nominated to a node that fits goes there without scoring.
func TestNominatedNode(t *testing.T) {
	s := cluster([]*corev1.Node{mkNode("a"), mkNode("b")}, mkPod("e", req("cpu", "3"), on("b")))
	p := mkPod("p", req("cpu", "500m"))
	p.Status.NominatedNodeName = "b"
	if got, _ := s.Schedule(p); got != "b" {
		t.Errorf("nominated and fitting: %q, want b", got)
	}
	p.Spec.Containers[0].Resources.Requests = mkPod("x", req("cpu", "2")).Spec.Containers[0].Resources.Requests
	if got, _ := s.Schedule(p); got != "a" {
		t.Errorf("nominated but full: %q, want a", got)
	}
}

// A deleted node's pods stay cached and count again if it returns, as in
// kube-scheduler's cache.
func TestNodeDeletedAndBack(t *testing.T) {
	s := cluster([]*corev1.Node{mkNode("a", alloc("cpu", "1"))}, mkPod("e", req("cpu", "1"), on("a")))
	s.DeleteNode("a")
	if _, err := s.Schedule(mkPod("p", req("cpu", "1"))); err == nil || err.Error() != "no nodes available to schedule pods" {
		t.Fatalf("no nodes: %v", err)
	}
	s.UpsertNode(mkNode("a", alloc("cpu", "1")))
	if _, err := s.Schedule(mkPod("p", req("cpu", "1"))); err == nil || err.Error() != "0/1 nodes are available: 1 Insufficient cpu." {
		t.Fatalf("node back: %v", err)
	}
}

// Rank returns the scored nodes best first, ties by name.
func TestRank(t *testing.T) {
	s := cluster([]*corev1.Node{mkNode("c"), mkNode("b"), mkNode("a")}, mkPod("e", req("cpu", "2", "memory", "8Gi"), on("a")))
	got, err := s.Rank(mkPod("p", req("cpu", "1", "memory", "1Gi")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Node != "b" || got[1].Node != "c" || got[0].Score != got[1].Score || got[2].Node != "a" || got[2].Score >= got[1].Score {
		t.Fatalf("ranking %v", got)
	}
	if _, err := s.Rank(mkPod("big", req("cpu", "8"))); err == nil {
		t.Fatal("no error for a pod that fits nowhere")
	}
}
