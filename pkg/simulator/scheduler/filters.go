package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// The reasons kube-scheduler's filter plugins report, word for word; the
// FitError message is built from them.
const (
	reasonUnschedulable = "node(s) were unschedulable"
	// Up to v1.35 this named the first taint ("had untolerated taint {k: v}");
	// kube-scheduler v1.37.2 reports it without the taint.
	reasonTaints            = "node(s) had untolerated taint(s)"
	reasonNodeName          = "node(s) didn't match the requested node name"
	reasonNodeAffinity      = "node(s) didn't match Pod's node affinity/selector"
	reasonNodePorts         = "node(s) didn't have free ports for the requested pod ports"
	reasonTooManyPods       = "Too many pods"
	reasonSpreadLabel       = "node(s) didn't match pod topology spread constraints (missing required label)"
	reasonSpread            = "node(s) didn't match pod topology spread constraints"
	reasonAffinity          = "node(s) didn't match pod affinity rules"
	reasonAntiAffinity      = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAntiAffin = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// The toleration comparison operators (Lt/Gt) are alpha and off in v1.37.
const comparisonOperators = false

var logger = klog.Background()

// filter runs the default profile's filters on one node in the profile's
// order and, like the framework, stops at the first plugin that rejects
// it. It appends the rejecting plugin's reasons to buf and returns it; a
// node that fits adds none.
func (s *Scheduler) filter(pi *podInfo, ni *nodeInfo, buf []string) []string {
	n := ni.node
	// NodeUnschedulable
	if n.Spec.Unschedulable && !tolerates(pi.pod.Spec.Tolerations, &unschedulableTaint) {
		return append(buf, reasonUnschedulable)
	}
	// NodeName
	if pi.pod.Spec.NodeName != "" && pi.pod.Spec.NodeName != n.Name {
		return append(buf, reasonNodeName)
	}
	// TaintToleration (NoSchedule and NoExecute taints, first one reported)
	if untoleratedIndex(ni.taints, pi.pod.Spec.Tolerations) >= 0 {
		return append(buf, reasonTaints)
	}
	// NodeAffinity (nodeSelector and required node affinity)
	if !pi.fitsNodeAffinity(ni) {
		return append(buf, reasonNodeAffinity)
	}
	// NodePorts
	for _, cp := range pi.ports {
		if ni.ports.conflicts(cp) {
			return append(buf, reasonNodePorts)
		}
	}
	// NodeResourcesFit
	if r := fitReasons(pi, ni, buf); len(r) > len(buf) {
		return r
	}
	// VolumeBinding (bound volumes' node affinity, WaitForFirstConsumer classes' topologies)
	if pi.volumes != nil {
		if r := pi.volumes.filter(n); r != "" {
			return append(buf, r)
		}
	}
	// PodTopologySpread (DoNotSchedule constraints)
	if pi.spread != nil {
		if r := pi.spread.filter(ni); r != "" {
			return append(buf, r)
		}
	}
	// InterPodAffinity
	if pi.affinity != nil {
		if r := pi.affinity.filter(ni); r != "" {
			return append(buf, r)
		}
	}
	return buf
}

var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

func doNotSchedule(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// untoleratedIndex is FindMatchingUntoleratedTaint without its copy: the
// index of the first NoSchedule/NoExecute taint the tolerations do not
// cover, or -1.
func untoleratedIndex(taints []corev1.Taint, tols []corev1.Toleration) int {
	for i := range taints {
		if doNotSchedule(&taints[i]) && !tolerates(tols, &taints[i]) {
			return i
		}
	}
	return -1
}

func tolerates(tols []corev1.Toleration, t *corev1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(logger, tols, t, comparisonOperators)
}

// fitReasons is NodeResourcesFit's Filter: pod count first, then each
// requested resource against allocatable minus what the node's pods request.
func fitReasons(pi *podInfo, ni *nodeInfo, out []string) []string {
	if int64(len(ni.pods))+1 > ni.allowedPods {
		out = append(out, reasonTooManyPods)
	}
	r := &pi.req
	if r.milliCPU == 0 && r.memory == 0 && r.ephemeral == 0 && len(r.scalars) == 0 {
		return out
	}
	if r.milliCPU > 0 && r.milliCPU > ni.alloc.milliCPU-ni.requested.milliCPU {
		out = append(out, "Insufficient cpu")
	}
	if r.memory > 0 && r.memory > ni.alloc.memory-ni.requested.memory {
		out = append(out, "Insufficient memory")
	}
	if r.ephemeral > 0 && r.ephemeral > ni.alloc.ephemeral-ni.requested.ephemeral {
		out = append(out, "Insufficient ephemeral-storage")
	}
	for _, name := range pi.scalarNames {
		if q := r.scalars[name]; q > 0 && q > ni.alloc.scalars[name]-ni.requested.scalars[name] {
			out = append(out, "Insufficient "+string(name))
		}
	}
	return out
}
