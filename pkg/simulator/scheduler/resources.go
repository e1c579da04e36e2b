package scheduler

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The requests kube-scheduler assumes for a container that names no cpu or
// memory request when it scores nodes (schedutil.DefaultMilliCPURequest and
// DefaultMemoryRequest); without them LeastAllocated would see best-effort
// pods as free and pile them onto one node.
const (
	defaultMilliCPURequest int64 = 100
	defaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// resources is a request or capacity vector in the scheduler's units:
// millicores for cpu, bytes for memory and ephemeral storage, plain counts
// for scalar resources (extended resources, hugepages).
type resources struct {
	milliCPU  int64
	memory    int64
	ephemeral int64
	scalars   map[corev1.ResourceName]int64
}

// fromList converts a ResourceList the way the scheduler's Resource.Add
// does: "pods" and unknown native names are dropped.
func fromList(rl corev1.ResourceList) resources {
	var r resources
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.milliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.memory = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.ephemeral = q.Value()
		default:
			if isScalar(name) {
				if r.scalars == nil {
					r.scalars = map[corev1.ResourceName]int64{}
				}
				r.scalars[name] = q.Value()
			}
		}
	}
	return r
}

// add adds sign*o to r.
func (r *resources) add(o resources, sign int64) {
	r.milliCPU += sign * o.milliCPU
	r.memory += sign * o.memory
	r.ephemeral += sign * o.ephemeral
	for name, v := range o.scalars {
		if r.scalars == nil {
			r.scalars = map[corev1.ResourceName]int64{}
		}
		r.scalars[name] += sign * v
		if r.scalars[name] == 0 {
			delete(r.scalars, name)
		}
	}
}

// isScalar mirrors the scheduler's IsScalarResourceName: extended resources
// (a domain other than kubernetes.io), hugepages, attachable volumes and
// kubernetes.io-prefixed native resources are counted as integers.
func isScalar(name corev1.ResourceName) bool {
	s := string(name)
	switch {
	case strings.HasPrefix(s, corev1.ResourceHugePagesPrefix),
		strings.HasPrefix(s, corev1.ResourceAttachableVolumesPrefix),
		strings.Contains(s, "kubernetes.io/"):
		return true
	}
	return strings.Contains(s, "/") && !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}

// podRequests is what NodeResourcesFit charges a pod: containers summed,
// init containers (and sidecars) folded in by the KEP-753 formula, pod-level
// requests and overhead applied, all by component-helpers' PodRequests.
// In-place resize status is not consulted: the simulator's pods are never
// resized.
func podRequests(p *corev1.Pod) resources {
	return fromList(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
}

// nonZeroRequests is the cpu and memory LeastAllocated scores with: like
// podRequests, but a container without a cpu or memory request counts as
// 100m / 200Mi (unless a pod-level request covers it).
func nonZeroRequests(p *corev1.Pod, req resources) (milliCPU, memory int64) {
	if allRequestCPUAndMemory(p) {
		// No default applies: the second aggregation would give req again.
		return req.milliCPU, req.memory
	}
	rl := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: nonMissing(p),
	})
	cpu := rl[corev1.ResourceCPU]
	mem := rl[corev1.ResourceMemory]
	return cpu.MilliValue(), mem.Value()
}

// nonMissing is the scheduler's getNonMissingContainerRequests: the defaults
// apply to every container unless the pod sets pod-level requests, in which
// case only the resources the pod level leaves out get them.
func nonMissing(p *corev1.Pod) corev1.ResourceList {
	cpu := *resource.NewMilliQuantity(defaultMilliCPURequest, resource.DecimalSI)
	mem := *resource.NewQuantity(defaultMemoryRequest, resource.DecimalSI)
	if !resourcehelper.IsPodLevelRequestsSet(p) {
		return corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
	}
	out := corev1.ResourceList{}
	if _, ok := p.Spec.Resources.Requests[corev1.ResourceCPU]; !ok {
		out[corev1.ResourceCPU] = cpu
	}
	if _, ok := p.Spec.Resources.Requests[corev1.ResourceMemory]; !ok {
		out[corev1.ResourceMemory] = mem
	}
	return out
}

// allRequestCPUAndMemory reports a pod whose every container and init
// container names a cpu and a memory request.
func allRequestCPUAndMemory(p *corev1.Pod) bool {
	if resourcehelper.IsPodLevelRequestsSet(p) {
		return false
	}
	has := func(cs []corev1.Container) bool {
		for i := range cs {
			rl := cs[i].Resources.Requests
			if _, ok := rl[corev1.ResourceCPU]; !ok {
				return false
			}
			if _, ok := rl[corev1.ResourceMemory]; !ok {
				return false
			}
		}
		return true
	}
	return has(p.Spec.Containers) && has(p.Spec.InitContainers)
}
