package lifecycle

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// EphemeralTaints are put on every new node by the kubelet, the cloud
// controller or Nodesmith itself and go away by themselves; a node carrying
// one is not ready for work yet.
var EphemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule},
	nsv1.UnregisteredTaint,
}

// Initialized reports whether node is ready to take the pods its claim was
// made for and, when it is not, what it still waits for: the Node is Ready,
// the startup and ephemeral taints are gone, and every extended resource the
// instance type promises (e.g. nvidia.com/gpu) has been registered by its
// device plugin.
func Initialized(claim *nsv1.NodeClaim, node *corev1.Node) (bool, string) {
	if node == nil {
		return false, "no node registered"
	}
	ready := NodeCondition(node, corev1.NodeReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		return false, fmt.Sprintf("node %s is not Ready", node.Name)
	}
	for _, want := range append(append([]corev1.Taint{}, claim.Spec.StartupTaints...), EphemeralTaints...) {
		for _, have := range node.Spec.Taints {
			if have.MatchTaint(&want) {
				return false, fmt.Sprintf("node %s still has taint %s", node.Name, have.ToString())
			}
		}
	}
	if missing := missingExtendedResources(claim, node); len(missing) > 0 {
		return false, fmt.Sprintf("node %s has not registered extended resources %v", node.Name, missing)
	}
	return true, ""
}

func missingExtendedResources(claim *nsv1.NodeClaim, node *corev1.Node) []string {
	var missing []string
	for name, q := range claim.Status.Capacity {
		if !isExtended(name) || q.IsZero() {
			continue
		}
		if have, ok := node.Status.Allocatable[name]; !ok || have.IsZero() {
			missing = append(missing, string(name))
		}
	}
	sort.Strings(missing)
	return missing
}

func isExtended(name corev1.ResourceName) bool {
	if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
		return false
	}
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods, corev1.ResourceStorage:
		return false
	}
	return true
}

// NodeCondition is the node's condition of type t, or nil when the node has not reported it.
func NodeCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
