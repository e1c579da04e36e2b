package state

import (
	"encoding/json"
	"os"
	"reflect"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/yaml"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func loadPod(t *testing.T) *corev1.Pod {
	t.Helper()
	raw, err := os.ReadFile("testdata/web-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(raw, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// TrimPod keeps everything scheduling, disruption and drain read and drops
// the rest; on a realistic Deployment pod it removes most of the bytes.
func TestTrimPodKeepsWhatControllersRead(t *testing.T) {
	orig := loadPod(t)
	out, err := TrimPod(orig.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	pod := out.(*corev1.Pod)

	kept := []struct {
		what      string
		got, want any
	}{
		{"requests", resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), resourcehelper.PodRequests(orig, resourcehelper.PodResourcesOptions{})},
		{"limits", resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{}), resourcehelper.PodLimits(orig, resourcehelper.PodResourcesOptions{})},
		{"labels", pod.Labels, orig.Labels},
		{"do-not-disrupt", pod.Annotations[nsv1.AnnotationDoNotDisrupt], "true"},
		{"owners", pod.OwnerReferences, orig.OwnerReferences},
		{"uid and version", string(pod.UID) + "@" + pod.ResourceVersion, string(orig.UID) + "@" + orig.ResourceVersion},
		{"node name", pod.Spec.NodeName, orig.Spec.NodeName},
		{"node selector", pod.Spec.NodeSelector, orig.Spec.NodeSelector},
		{"affinity", pod.Spec.Affinity, orig.Spec.Affinity},
		{"tolerations", pod.Spec.Tolerations, orig.Spec.Tolerations},
		{"topology spread", pod.Spec.TopologySpreadConstraints, orig.Spec.TopologySpreadConstraints},
		{"volumes", pod.Spec.Volumes, orig.Spec.Volumes},
		{"priority", *pod.Spec.Priority, *orig.Spec.Priority},
		{"grace period", *pod.Spec.TerminationGracePeriodSeconds, *orig.Spec.TerminationGracePeriodSeconds},
		{"scheduler", pod.Spec.SchedulerName, orig.Spec.SchedulerName},
		{"host ports", pod.Spec.Containers[0].Ports, orig.Spec.Containers[0].Ports},
		{"images", pod.Spec.Containers[1].Image, orig.Spec.Containers[1].Image},
		{"phase", pod.Status.Phase, orig.Status.Phase},
		{"conditions", pod.Status.Conditions, orig.Status.Conditions},
	}
	for _, k := range kept {
		if !reflect.DeepEqual(k.got, k.want) {
			t.Errorf("%s changed: %v, want %v", k.what, k.got, k.want)
		}
	}

	dropped := []struct {
		what string
		left bool
	}{
		{"managedFields", pod.ManagedFields != nil},
		{"last-applied annotation", pod.Annotations[corev1.LastAppliedConfigAnnotation] != ""},
		{"env", pod.Spec.Containers[0].Env != nil || pod.Spec.InitContainers[0].Env != nil},
		{"envFrom", pod.Spec.Containers[0].EnvFrom != nil},
		{"command and args", pod.Spec.InitContainers[0].Command != nil || pod.Spec.Containers[0].Args != nil},
		{"probes", pod.Spec.Containers[0].LivenessProbe != nil || pod.Spec.Containers[0].ReadinessProbe != nil},
		{"lifecycle", pod.Spec.Containers[0].Lifecycle != nil},
		{"mounts", pod.Spec.Containers[0].VolumeMounts != nil},
		{"container statuses", pod.Status.ContainerStatuses != nil || pod.Status.InitContainerStatuses != nil},
	}
	for _, d := range dropped {
		if d.left {
			t.Errorf("%s kept", d.what)
		}
	}

	before, after := jsonSize(t, orig), jsonSize(t, pod)
	t.Logf("pod JSON: %d bytes before, %d after (%.0f %% less)", before, after, 100*(1-float64(after)/float64(before)))
	if after*2 > before {
		t.Errorf("trimmed pod is %d of %d bytes: expected at least half dropped on this pod", after, before)
	}
}

// Anything that is not a pod — the informer's tombstones among them —
// passes unchanged.
func TestTrimPodPassesOtherObjects(t *testing.T) {
	node := &corev1.Node{}
	node.Name = "n"
	for _, o := range []any{node, "tombstone", nil} {
		got, err := TrimPod(o)
		if err != nil || !reflect.DeepEqual(got, o) {
			t.Errorf("TrimPod(%v) = %v, %v", o, got, err)
		}
	}
}

func jsonSize(t *testing.T, o any) int {
	t.Helper()
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw)
}

// BenchmarkCachedPodHeap reports the heap a cached copy of the realistic
// pod takes, as the informer decodes it (untrimmed) and after TrimPod.
//
//	go test ./pkg/controllers/state -run '^$' -bench CachedPodHeap
func BenchmarkCachedPodHeap(b *testing.B) {
	raw, err := os.ReadFile("testdata/web-pod.yaml")
	if err != nil {
		b.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	for _, trim := range []bool{false, true} {
		name := "untrimmed"
		if trim {
			name = "TrimPod"
		}
		b.Run(name, func(b *testing.B) {
			const n = 5000
			var perPod float64
			for range b.N {
				pods := make([]*corev1.Pod, n)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i := range pods {
					p := &corev1.Pod{}
					if err := json.Unmarshal(js, p); err != nil {
						b.Fatal(err)
					}
					if trim {
						if _, err := TrimPod(p); err != nil {
							b.Fatal(err)
						}
					}
					pods[i] = p
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPod = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(pods)
			}
			b.ReportMetric(perPod, "heap-B/pod")
		})
	}
}
