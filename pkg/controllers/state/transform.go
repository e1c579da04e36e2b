package state

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TrimPod is the informer cache's transform for pods: it drops what no
// controller here reads and what makes up most of a real pod's bytes — its
// managedFields, the kubectl last-applied annotation (a second copy of the
// whole manifest), each container's command, arguments, environment,
// mounts, probes and lifecycle hooks, and the container statuses. What
// scheduling, disruption and drain read stays whole: metadata (labels,
// other annotations, owners, timestamps), every scheduling field of the
// spec (resources, ports, selectors, affinity, tolerations, topology
// spread, overhead, priority, volumes) and the pod's phase and conditions.
//
// Nothing writes a pod from the cache with Update: the one pod write (the
// interruption handler's status condition) is a patch.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		// Tombstones (DeletedFinalStateUnknown) and other kinds pass as they are.
		return obj, nil
	}
	pod.ManagedFields = nil
	delete(pod.Annotations, corev1.LastAppliedConfigAnnotation)
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			trimContainer(&cs[i])
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		trimContainer((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	pod.Status.ContainerStatuses = nil
	pod.Status.InitContainerStatuses = nil
	pod.Status.EphemeralContainerStatuses = nil
	return pod, nil
}

// trimContainer keeps a container's name, image, resources, ports,
// restart policy (sidecars count differently) and resize policy.
func trimContainer(c *corev1.Container) {
	c.Command, c.Args, c.WorkingDir = nil, nil, ""
	c.Env, c.EnvFrom = nil, nil
	c.VolumeMounts, c.VolumeDevices = nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	c.TerminationMessagePath, c.TerminationMessagePolicy = "", ""
	c.SecurityContext = nil
}

var _ toolscache.TransformFunc = TrimPod

// CacheOptions are the informer cache's options the controller runs with:
// managedFields dropped from every object (a third or more of a pod's
// bytes, read by no controller), pods trimmed by TrimPod.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: TrimPod}},
	}
}
