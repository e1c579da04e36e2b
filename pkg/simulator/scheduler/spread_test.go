package scheduler

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// filterAll runs the filters on every node and returns node → first
// rejection reason ("" when the node fits).
func filterAll(s *Scheduler, p *corev1.Pod) map[string]string {
	pi := s.newPodInfo(p)
	out := map[string]string{}
	for _, ni := range s.nodeList() {
		r := s.filter(pi, ni, nil)
		out[ni.name] = ""
		if len(r) > 0 {
			out[ni.name] = r[0]
		}
	}
	return out
}

// podsOn returns n pods labelled foo=bar bound to node.
func podsOn(node string, n int, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, mkPod(node+"-"+string(rune('a'+i)), append([]podOpt{labelsOf("foo", "bar"), on(node)}, opts...)...))
	}
	return out
}

func concat(groups ...[]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// Cases follow upstream podtopologyspread/filtering.go: skew = matching
// pods in the node's domain + (1 if the pod matches its own selector) −
// the minimum over eligible domains, which must not exceed maxSkew.
func TestSpreadFilter(t *testing.T) {
	four := func(extra ...nodeOpt) []*corev1.Node {
		return []*corev1.Node{
			mkNode("a", zone("z1")), mkNode("b", zone("z1")),
			mkNode("x", zone("z2")), mkNode("y", append([]nodeOpt{zone("z2")}, extra...)...),
		}
	}
	foo := sel("foo", "bar")
	hard := corev1.DoNotSchedule
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	pass, skew, label := "", reasonSpread, reasonSpreadLabel
	tests := []struct {
		name     string
		nodes    []*corev1.Node
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     map[string]string
	}{
		{
			name:     "zone skew: z1 has 3, z2 has 1",
			nodes:    four(),
			existing: concat(podsOn("a", 2), podsOn("b", 1), podsOn("y", 1)),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, hard, foo)),
			want:     map[string]string{"a": skew, "b": skew, "x": pass, "y": pass},
		},
		{
			name:     "hostname skew against an empty node",
			nodes:    four(),
			existing: concat(podsOn("a", 2), podsOn("b", 1), podsOn("y", 1)),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelHostname, 1, hard, foo)),
			want:     map[string]string{"a": skew, "b": skew, "x": pass, "y": skew},
		},
		{
			name:  "a node without the key is rejected as unresolvable",
			nodes: append(four(), mkNode("nozone")),
			pod:   mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, hard, foo)),
			want:  map[string]string{"a": pass, "b": pass, "x": pass, "y": pass, "nozone": label},
		},
		{
			// The incoming pod does not match its own selector: no +1.
			name:     "no self match",
			nodes:    four(),
			existing: concat(podsOn("a", 3), podsOn("y", 1)),
			pod:      mkPod("p", spread(corev1.LabelTopologyZone, 1, hard, foo)),
			want:     map[string]string{"a": skew, "b": skew, "x": pass, "y": pass},
		},
		{
			// Two eligible domains < minDomains 3: the global minimum is 0.
			name:     "minDomains above the domain count",
			nodes:    four(),
			existing: concat(podsOn("a", 2), podsOn("y", 1)),
			pod: mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 2, hard, foo, func(c *corev1.TopologySpreadConstraint) {
				three := int32(3)
				c.MinDomains = &three
			})),
			want: map[string]string{"a": skew, "b": skew, "x": pass, "y": pass},
		},
		{
			// nodeAffinityPolicy Honor (the default): only nodes the pod's
			// nodeSelector accepts (a and x) form the domains: z1=1, z2=2.
			name:     "nodeAffinityPolicy Honor",
			nodes:    []*corev1.Node{mkNode("a", zone("z1"), nodeLabels("pool", "blue")), mkNode("b", zone("z1")), mkNode("x", zone("z2"), nodeLabels("pool", "blue")), mkNode("y", zone("z2"))},
			existing: concat(podsOn("a", 1), podsOn("b", 3), podsOn("x", 2)),
			pod:      mkPod("p", labelsOf("foo", "bar"), nodeSelector("pool", "blue"), spread(corev1.LabelTopologyZone, 1, hard, foo)),
			want:     map[string]string{"a": pass, "b": reasonNodeAffinity, "x": skew, "y": reasonNodeAffinity},
		},
		{
			// Ignore counts b's pods too: z1=4, z2=2.
			name:     "nodeAffinityPolicy Ignore",
			nodes:    []*corev1.Node{mkNode("a", zone("z1"), nodeLabels("pool", "blue")), mkNode("b", zone("z1")), mkNode("x", zone("z2"), nodeLabels("pool", "blue")), mkNode("y", zone("z2"))},
			existing: concat(podsOn("a", 1), podsOn("b", 3), podsOn("x", 2)),
			pod: mkPod("p", labelsOf("foo", "bar"), nodeSelector("pool", "blue"), spread(corev1.LabelTopologyZone, 1, hard, foo, func(c *corev1.TopologySpreadConstraint) {
				c.NodeAffinityPolicy = &ignore
			})),
			want: map[string]string{"a": skew, "b": reasonNodeAffinity, "x": pass, "y": reasonNodeAffinity},
		},
		{
			// nodeTaintsPolicy Ignore (the default) counts the tainted node y:
			// z1=2, z2=3.
			name:     "nodeTaintsPolicy Ignore",
			nodes:    four(taint("t", "", corev1.TaintEffectNoSchedule)),
			existing: concat(podsOn("a", 1), podsOn("b", 1), podsOn("y", 3)),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, hard, foo)),
			want:     map[string]string{"a": pass, "b": pass, "x": skew, "y": reasonTaints},
		},
		{
			// Honor leaves y out: z1=2, z2=0.
			name:     "nodeTaintsPolicy Honor",
			nodes:    four(taint("t", "", corev1.TaintEffectNoSchedule)),
			existing: concat(podsOn("a", 1), podsOn("b", 1), podsOn("y", 3)),
			pod: mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, hard, foo, func(c *corev1.TopologySpreadConstraint) {
				c.NodeTaintsPolicy = &honor
			})),
			want: map[string]string{"a": skew, "b": skew, "x": pass, "y": reasonTaints},
		},
		{
			// matchLabelKeys narrows the selector to the pod's own version.
			name:     "matchLabelKeys",
			nodes:    four(),
			existing: concat(podsOn("a", 2, labelsOf("version", "v1")), podsOn("x", 2, labelsOf("version", "v2"))),
			pod: mkPod("p", labelsOf("foo", "bar", "version", "v2"), spread(corev1.LabelTopologyZone, 1, hard, foo, func(c *corev1.TopologySpreadConstraint) {
				c.MatchLabelKeys = []string{"version"}
			})),
			want: map[string]string{"a": pass, "b": pass, "x": skew, "y": skew},
		},
		{
			name:     "terminating pods do not count",
			nodes:    four(),
			existing: concat(podsOn("a", 3, terminating), podsOn("x", 1)),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, hard, foo)),
			want:     map[string]string{"a": pass, "b": pass, "x": skew, "y": skew},
		},
		{
			name:     "pods of another namespace do not count",
			nodes:    four(),
			existing: podsOn("a", 3, inNamespace("other")),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, hard, foo)),
			want:     map[string]string{"a": pass, "b": pass, "x": pass, "y": pass},
		},
		{
			// An empty selector counts no pods at all (countPodsMatchSelector)
			// yet matches the pod itself.
			name:     "empty selector counts nothing",
			nodes:    four(),
			existing: podsOn("a", 5),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, hard, &metav1.LabelSelector{})),
			want:     map[string]string{"a": pass, "b": pass, "x": pass, "y": pass},
		},
		{
			name:     "ScheduleAnyway never filters",
			nodes:    four(),
			existing: podsOn("a", 5),
			pod:      mkPod("p", labelsOf("foo", "bar"), spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, foo)),
			want:     map[string]string{"a": pass, "b": pass, "x": pass, "y": pass},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := filterAll(cluster(tt.nodes, tt.existing...), tt.pod)
			if !maps.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}
