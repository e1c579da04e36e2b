package scheduler

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// podInfo is what one scheduling cycle knows about the pod being scheduled:
// the PreFilter and PreScore state of the plugins, computed once and read
// for every node.
type podInfo struct {
	pod *corev1.Pod

	req         resources
	scalarNames []corev1.ResourceName // sorted, so Fit reasons come in a fixed order
	nonZeroCPU  int64
	nonZeroMem  int64
	ports       []corev1.ContainerPort

	requiredNodeAffinity nodeaffinity.RequiredNodeAffinity
	hasNodeAffinity      bool // a nodeSelector or required node affinity to test
	preferredNodeAff     *nodeaffinity.PreferredSchedulingTerms
	preferTolerations    []corev1.Toleration

	spread   *spreadFilter   // nil: no DoNotSchedule constraints
	affinity *affinityFilter // nil: no inter-pod affinity rule applies
	volumes  *volumeFilter   // nil: no PersistentVolumeClaims
	// prefilter is why a PreFilter rejected the pod outright, if one did.
	prefilter string
}

func (s *Scheduler) newPodInfo(p *corev1.Pod) *podInfo {
	pi := &podInfo{pod: p, req: podRequests(p), ports: hostPorts(p)}
	for name := range pi.req.scalars {
		pi.scalarNames = append(pi.scalarNames, name)
	}
	slices.Sort(pi.scalarNames)
	pi.nonZeroCPU, pi.nonZeroMem = nonZeroRequests(p, pi.req)

	pi.requiredNodeAffinity = nodeaffinity.GetRequiredNodeAffinity(p)
	a := p.Spec.Affinity
	pi.hasNodeAffinity = len(p.Spec.NodeSelector) > 0 ||
		(a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
	if a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		// Invalid preferred terms are rejected by the API server; the real
		// plugin errors out on them, we just do not score them.
		if terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution); err == nil {
			pi.preferredNodeAff = terms
		}
	}
	for _, t := range p.Spec.Tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			pi.preferTolerations = append(pi.preferTolerations, t)
		}
	}
	pi.volumes, pi.prefilter = s.newVolumeFilter(p)
	pi.spread = s.newSpreadFilter(pi)
	pi.affinity = s.newAffinityFilter(pi)
	return pi
}

// fitsNodeAffinity is the NodeAffinity filter (nodeSelector ANDed with the
// required terms; parse errors count as no match, as in the plugin).
func (pi *podInfo) fitsNodeAffinity(ni *nodeInfo) bool {
	if !pi.hasNodeAffinity {
		return true
	}
	ok, _ := pi.requiredNodeAffinity.Match(ni.node)
	return ok
}

// includes is a spread constraint's node inclusion test: nodeAffinityPolicy
// Honor counts only nodes the pod's node affinity accepts, nodeTaintsPolicy
// Honor only nodes whose NoSchedule/NoExecute taints it tolerates.
func (pi *podInfo) includes(c *spreadConstraint, ni *nodeInfo) bool {
	if c.honorAffinity && !pi.fitsNodeAffinity(ni) {
		return false
	}
	if c.honorTaints {
		if untoleratedIndex(ni.taints, pi.pod.Spec.Tolerations) >= 0 {
			return false
		}
	}
	return true
}
