package convert

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// KarpenterPoolRoom says whether a Karpenter NodePool may still launch a
// node, and why. Karpenter launches for a pool until a limit is reached:
// every node brings cpu, memory and pods, so one of those limits at or
// below what the pool already has (status.resources) — a limit of 0 above
// all — stops it for good; a limit on another resource (a GPU) stops only
// nodes that have it, so the pool still has room. No limits: room without
// end. This is the rule both the migration guide's cut-over and
// Nodesmith's start-up check use (pkg/controllers/karpenter).
func KarpenterPoolRoom(limits, used corev1.ResourceList) (room bool, why string) {
	if len(limits) == 0 {
		return true, "no limits"
	}
	var open []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		limit, ok := limits[name]
		if !ok {
			continue
		}
		u := used[name]
		if limit.Cmp(u) <= 0 {
			return false, fmt.Sprintf("%s limit %s reached (%s in use)", name, limit.String(), quantity(u))
		}
		open = append(open, fmt.Sprintf("%s %s of %s", name, quantity(u), limit.String()))
	}
	if len(open) == 0 {
		var names []string
		for n := range limits {
			names = append(names, string(n))
		}
		sort.Strings(names)
		return true, "limits only on " + strings.Join(names, ", ") + ", which not every node has"
	}
	return true, strings.Join(open, ", ") + " in use"
}

func quantity(q resource.Quantity) string {
	if q.IsZero() {
		return "0"
	}
	return q.String()
}
