package scheduler

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Upstream tainttoleration and nodeunschedulable filters, plus the taints
// the node lifecycle controller puts on nodes that are not Ready.
func TestTaintAndUnschedulableFilters(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
		pod  *corev1.Pod
		want map[string]int
	}{
		{
			// kube-scheduler v1.37.2 no longer names the taint in the reason.
			name: "untolerated NoSchedule taint",
			node: mkNode("n1", taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)),
			pod:  mkPod("p"),
			want: map[string]int{reasonTaints: 1},
		},
		{
			name: "untolerated NoExecute taint",
			node: mkNode("n1", taint("spot", "", corev1.TaintEffectNoExecute)),
			pod:  mkPod("p"),
			want: map[string]int{reasonTaints: 1},
		},
		{
			name: "PreferNoSchedule never filters",
			node: mkNode("n1", taint("soft", "x", corev1.TaintEffectPreferNoSchedule)),
			pod:  mkPod("p"),
		},
		{
			name: "Equal toleration with the value",
			node: mkNode("n1", taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)),
			pod:  mkPod("p", tolerate("dedicated", corev1.TolerationOpEqual, "gpu", corev1.TaintEffectNoSchedule)),
		},
		{
			name: "Equal toleration with another value",
			node: mkNode("n1", taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)),
			pod:  mkPod("p", tolerate("dedicated", corev1.TolerationOpEqual, "cpu", corev1.TaintEffectNoSchedule)),
			want: map[string]int{reasonTaints: 1},
		},
		{
			name: "Exists with no key and no effect tolerates everything",
			node: mkNode("n1", taint("a", "1", corev1.TaintEffectNoSchedule), taint("b", "2", corev1.TaintEffectNoExecute)),
			pod:  mkPod("p", tolerate("", corev1.TolerationOpExists, "", "")),
		},
		{
			name: "toleration for the wrong effect",
			node: mkNode("n1", taint("a", "1", corev1.TaintEffectNoExecute)),
			pod:  mkPod("p", tolerate("a", corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule)),
			want: map[string]int{reasonTaints: 1},
		},
		{
			name: "Ready=False node carries not-ready",
			node: mkNode("n1", ready(corev1.ConditionFalse)),
			pod:  mkPod("p"),
			want: map[string]int{reasonTaints: 1},
		},
		{
			name: "node without a Ready condition carries not-ready",
			node: mkNode("n1", noConditions),
			pod:  mkPod("p"),
			want: map[string]int{reasonTaints: 1},
		},
		{
			name: "Ready=Unknown node carries unreachable",
			node: mkNode("n1", ready(corev1.ConditionUnknown)),
			pod:  mkPod("p", tolerate(corev1.TaintNodeNotReady, corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule)),
			want: map[string]int{reasonTaints: 1},
		},
		{
			name: "a pod tolerating unreachable lands on an unknown node",
			node: mkNode("n1", ready(corev1.ConditionUnknown)),
			pod:  mkPod("p", tolerate(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule)),
		},
		{
			name: "a not-ready node with the taint already set gets no second one",
			node: mkNode("n1", ready(corev1.ConditionFalse), taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule)),
			pod:  mkPod("p", tolerate(corev1.TaintNodeNotReady, corev1.TolerationOpEqual, "", corev1.TaintEffectNoSchedule)),
		},
		{
			name: "a pod tolerating not-ready lands on an unready node",
			node: mkNode("n1", ready(corev1.ConditionFalse)),
			pod:  mkPod("p", tolerate(corev1.TaintNodeNotReady, corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule)),
		},
		{
			name: "cordoned node",
			node: mkNode("n1", cordoned),
			pod:  mkPod("p"),
			want: map[string]int{reasonUnschedulable: 1},
		},
		{
			// NodeUnschedulable runs before TaintToleration, so a cordoned,
			// tainted node reports only that it is unschedulable.
			name: "cordon reported before taints",
			node: mkNode("n1", cordoned, taint("a", "1", corev1.TaintEffectNoSchedule)),
			pod:  mkPod("p"),
			want: map[string]int{reasonUnschedulable: 1},
		},
		{
			name: "tolerating the unschedulable taint ignores the cordon",
			node: mkNode("n1", cordoned),
			pod:  mkPod("p", tolerate(corev1.TaintNodeUnschedulable, corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule)),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := reasonsOf(cluster([]*corev1.Node{tt.node}), tt.pod)
			if !maps.Equal(got, tt.want) {
				t.Errorf("reasons = %v, want %v", got, tt.want)
			}
		})
	}
}

// Upstream nodeaffinity filter (nodeSelector ANDed with required terms;
// terms ORed, expressions ANDed; matchFields on metadata.name).
func TestNodeAffinityFilter(t *testing.T) {
	term := func(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: reqs}
	}
	required := func(terms ...corev1.NodeSelectorTerm) podOpt {
		return affinity(func(a *corev1.Affinity) {
			a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}
		})
	}
	in := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	nodes := []*corev1.Node{
		mkNode("a", zone("z1"), nodeLabels("arch", "arm64")),
		mkNode("b", zone("z2"), nodeLabels("arch", "amd64")),
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		wantNode string
		want     map[string]int
	}{
		{name: "nodeSelector", pod: mkPod("p", nodeSelector("arch", "amd64")), wantNode: "b"},
		{name: "nodeSelector matching nothing", pod: mkPod("p", nodeSelector("arch", "s390x")), want: map[string]int{reasonNodeAffinity: 2}},
		{name: "terms are ORed", pod: mkPod("p", required(term(in("arch", "s390x")), term(in(corev1.LabelTopologyZone, "z1")))), wantNode: "a"},
		{name: "expressions are ANDed", pod: mkPod("p", required(term(in("arch", "arm64"), in(corev1.LabelTopologyZone, "z2")))), want: map[string]int{reasonNodeAffinity: 2}},
		{
			name:     "nodeSelector and affinity must both hold",
			pod:      mkPod("p", nodeSelector("arch", "amd64"), required(term(in(corev1.LabelTopologyZone, "z1", "z2")))),
			wantNode: "b",
		},
		{
			name: "matchFields metadata.name",
			pod: mkPod("p", required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}},
			}})),
			wantNode: "b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, node := reasonsOf(cluster(nodes), tt.pod)
			if !maps.Equal(got, tt.want) || node != tt.wantNode {
				t.Errorf("got node %q reasons %v, want node %q reasons %v", node, got, tt.wantNode, tt.want)
			}
		})
	}
}
