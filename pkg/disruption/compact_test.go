package disruption

import (
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCompactViewsPlanTheSame: folding a node's pods into its room (and
// pre-filtering the pools' types) must not change any plan of a cluster
// without topology constraints.
func TestCompactViewsPlanTheSame(t *testing.T) {
	plans := 0
	for seed := int64(0); seed < 60; seed++ {
		var got [2]string
		for i, off := range []bool{false, true} {
			compactOff = off
			w := randomWorld(rand.New(rand.NewSource(seed)))
			plan, err := Compute(w.input())
			if err != nil {
				t.Fatal(err)
			}
			got[i] = strings.Join(summaries(plan), ",")
			for _, s := range plan.Skipped {
				got[i] += "|" + s.Claim + ":" + string(s.Reason)
			}
		}
		compactOff = false
		if got[0] != got[1] {
			t.Fatalf("seed %d: compact views plan\n%s\nwithout them\n%s", seed, got[0], got[1])
		}
		if got[0] != "" {
			plans++
		}
	}
	if plans == 0 {
		t.Fatal("no plan to compare")
	}
}

// TestTopologyTurnsCompactViewsOff: one pod with anti-affinity anywhere
// means the solver must see every pod.
func TestTopologyTurnsCompactViewsOff(t *testing.T) {
	w := newWorld(pool("p"))
	n := w.node("p", "large", "zone-a", "on-demand")
	w.pod(n, "1")
	if !topologyFree(w.snap.Pods) {
		t.Fatal("plain pods are topology free")
	}
	w.pod(n, "1", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	})
	if topologyFree(w.snap.Pods) {
		t.Fatal("a pod with anti-affinity must turn compact views off")
	}
}
