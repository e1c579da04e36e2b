package lifecycle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestInitialized(t *testing.T) {
	startup := corev1.Taint{Key: "cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	gpuClaim := &nsv1.NodeClaim{Status: nsv1.NodeClaimStatus{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("1"), "hugepages-2Mi": resource.MustParse("1Gi")}}}
	plainClaim := &nsv1.NodeClaim{Spec: nsv1.NodeClaimSpec{StartupTaints: []corev1.Taint{startup}}}
	node := func(ready corev1.ConditionStatus, taints []corev1.Taint, alloc corev1.ResourceList) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Spec:       corev1.NodeSpec{Taints: taints},
			Status:     corev1.NodeStatus{Allocatable: alloc, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
		}
	}
	tests := []struct {
		name       string
		claim      *nsv1.NodeClaim
		node       *corev1.Node
		want       bool
		wantReason string
	}{
		{name: "no node", claim: plainClaim, wantReason: "no node registered"},
		{name: "not ready", claim: plainClaim, node: node(corev1.ConditionFalse, nil, nil), wantReason: "not Ready"},
		{name: "ready", claim: plainClaim, node: node(corev1.ConditionTrue, nil, nil), want: true},
		{name: "startup taint still there", claim: plainClaim, node: node(corev1.ConditionTrue, []corev1.Taint{startup}, nil), wantReason: "cilium.io/agent-not-ready"},
		{name: "unregistered taint still there", claim: plainClaim, node: node(corev1.ConditionTrue, []corev1.Taint{nsv1.UnregisteredTaint}, nil), wantReason: "nodesmith.sh/unregistered"},
		{name: "not-ready taint still there", claim: plainClaim,
			node:       node(corev1.ConditionTrue, []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, nil),
			wantReason: corev1.TaintNodeNotReady},
		{name: "unrelated taint is fine", claim: plainClaim, node: node(corev1.ConditionTrue, []corev1.Taint{{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}, nil), want: true},
		{name: "gpu not registered yet", claim: gpuClaim, node: node(corev1.ConditionTrue, nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}), wantReason: "nvidia.com/gpu"},
		{name: "gpu registered as zero", claim: gpuClaim, node: node(corev1.ConditionTrue, nil, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")}), wantReason: "nvidia.com/gpu"},
		{name: "gpu registered", claim: gpuClaim, node: node(corev1.ConditionTrue, nil, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Initialized(tt.claim, tt.node)
			if got != tt.want || !strings.Contains(reason, tt.wantReason) {
				t.Fatalf("Initialized = %v %q, want %v containing %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}
