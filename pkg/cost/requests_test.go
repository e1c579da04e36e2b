package cost

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// cpuMemory must agree with the library's PodRequests on every shape: its
// fast path only covers pods whose requests are their containers' sum.
func TestCPUMemoryAgreesWithPodRequests(t *testing.T) {
	req := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	for name, spec := range map[string]corev1.PodSpec{
		"one container":  {Containers: []corev1.Container{{Resources: req("250m", "512Mi")}}},
		"two containers": {Containers: []corev1.Container{{Resources: req("250m", "512Mi")}, {Resources: req("1", "1Gi")}}},
		"no requests":    {Containers: []corev1.Container{{}}},
		"big init":       {InitContainers: []corev1.Container{{Resources: req("4", "8Gi")}}, Containers: []corev1.Container{{Resources: req("250m", "512Mi")}}},
		"sidecar":        {InitContainers: []corev1.Container{{Resources: req("100m", "64Mi"), RestartPolicy: &always}}, Containers: []corev1.Container{{Resources: req("250m", "512Mi")}}},
		"overhead":       {Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}, Containers: []corev1.Container{{Resources: req("250m", "512Mi")}}},
		"pod-level":      {Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}, Containers: []corev1.Container{{Resources: req("250m", "512Mi")}}},
	} {
		p := &corev1.Pod{Spec: spec}
		want := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		cpu, mem := cpuMemory(p)
		if cpu != want.Cpu().MilliValue() || mem != want.Memory().Value() {
			t.Errorf("%s: cpuMemory = %dm, %d; PodRequests = %dm, %d", name, cpu, mem, want.Cpu().MilliValue(), want.Memory().Value())
		}
	}
}
