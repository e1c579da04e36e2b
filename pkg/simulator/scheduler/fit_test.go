package scheduler

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Each case pins a behaviour of the upstream NodeResourcesFit filter
// (noderesources/fit.go fitsRequest) or of the requests it computes
// (component-helpers PodRequests).
func TestFitFilter(t *testing.T) {
	small := []nodeOpt{alloc("cpu", "2", "memory", "4Gi", "pods", "3")}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		existing []*corev1.Pod
		want     map[string]int // nil: fits
	}{
		{
			name: "fits in what the node's pods leave",
			pod:  mkPod("p", req("cpu", "1", "memory", "2Gi")),
			existing: []*corev1.Pod{
				mkPod("e", req("cpu", "1", "memory", "2Gi"), on("n1")),
			},
		},
		{
			// Every insufficient resource is a reason of its own.
			name:     "cpu and memory both short",
			pod:      mkPod("p", req("cpu", "1500m", "memory", "3Gi")),
			existing: []*corev1.Pod{mkPod("e", req("cpu", "1", "memory", "2Gi"), on("n1"))},
			want:     map[string]int{"Insufficient cpu": 1, "Insufficient memory": 1},
		},
		{
			// Init containers run one at a time: the pod needs their max, not sum.
			name: "init container maximum over the containers' sum",
			pod:  mkPod("p", req("cpu", "500m"), initContainer(false, "cpu", "2500m")),
			want: map[string]int{"Insufficient cpu": 1},
		},
		{
			name: "regular init containers do not add up",
			pod:  mkPod("p", req("cpu", "500m"), initContainer(false, "cpu", "2"), initContainer(false, "cpu", "2")),
		},
		{
			// Sidecars (restartPolicy Always) keep running, so they add to the containers.
			name: "sidecar init container adds to the containers",
			pod:  mkPod("p", req("cpu", "1500m"), initContainer(true, "cpu", "1")),
			want: map[string]int{"Insufficient cpu": 1},
		},
		{
			name: "pod overhead is charged",
			pod: mkPod("p", req("cpu", "1900m"), func(p *corev1.Pod) {
				p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
			}),
			want: map[string]int{"Insufficient cpu": 1},
		},
		{
			name: "extended resource the node lacks",
			pod:  mkPod("p", req("example.com/gpu", "1")),
			want: map[string]int{"Insufficient example.com/gpu": 1},
		},
		{
			name: "ephemeral storage",
			pod:  mkPod("p", req("ephemeral-storage", "1Gi")),
			want: map[string]int{"Insufficient ephemeral-storage": 1},
		},
		{
			// The pod count is checked before the early return for pods
			// requesting nothing.
			name: "too many pods even for a pod requesting nothing",
			pod:  mkPod("p"),
			existing: []*corev1.Pod{
				mkPod("e1", on("n1")), mkPod("e2", on("n1")), mkPod("e3", on("n1")),
			},
			want: map[string]int{"Too many pods": 1},
		},
		{
			name: "pod requesting nothing fits a full node",
			pod:  mkPod("p"),
			existing: []*corev1.Pod{
				mkPod("e", req("cpu", "2", "memory", "4Gi"), on("n1")),
			},
		},
		{
			// A terminating pod holds its resources until it is gone.
			name:     "terminating pod still counts",
			pod:      mkPod("p", req("cpu", "1")),
			existing: []*corev1.Pod{mkPod("e", req("cpu", "2"), on("n1"), terminating)},
			want:     map[string]int{"Insufficient cpu": 1},
		},
		{
			name:     "succeeded pod frees its resources",
			pod:      mkPod("p", req("cpu", "1")),
			existing: []*corev1.Pod{mkPod("e", req("cpu", "2"), on("n1"), phase(corev1.PodSucceeded))},
		},
		{
			name: "pod-level requests replace the containers' sum",
			pod: mkPod("p", req("cpu", "100m"), func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}
			}),
			want: map[string]int{"Insufficient cpu": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cluster([]*corev1.Node{mkNode("n1", small...)}, tt.existing...)
			got, _ := reasonsOf(s, tt.pod)
			if !maps.Equal(got, tt.want) {
				t.Errorf("reasons = %v, want %v", got, tt.want)
			}
		})
	}
}

// Upstream nodeports and nodename plugins: host-port conflicts by protocol
// and IP (HostPortInfo.CheckConflict), and spec.nodeName pinning.
func TestPortsAndNodeName(t *testing.T) {
	tests := []struct {
		name     string
		pod      *corev1.Pod
		existing []*corev1.Pod
		want     map[string]int
	}{
		{
			name:     "same TCP port on the wildcard address",
			pod:      mkPod("p", hostPort(8080, "", "")),
			existing: []*corev1.Pod{mkPod("e", hostPort(8080, corev1.ProtocolTCP, ""), on("n1"))},
			want:     map[string]int{reasonNodePorts: 1},
		},
		{
			name:     "same port, other protocol",
			pod:      mkPod("p", hostPort(8080, corev1.ProtocolUDP, "")),
			existing: []*corev1.Pod{mkPod("e", hostPort(8080, corev1.ProtocolTCP, ""), on("n1"))},
		},
		{
			name:     "same port on two specific addresses",
			pod:      mkPod("p", hostPort(8080, "", "10.0.0.2")),
			existing: []*corev1.Pod{mkPod("e", hostPort(8080, "", "10.0.0.1"), on("n1"))},
		},
		{
			name:     "a specific address collides with the wildcard",
			pod:      mkPod("p", hostPort(8080, "", "10.0.0.2")),
			existing: []*corev1.Pod{mkPod("e", hostPort(8080, "", "0.0.0.0"), on("n1"))},
			want:     map[string]int{reasonNodePorts: 1},
		},
		{
			name:     "the wildcard collides with a specific address",
			pod:      mkPod("p", hostPort(8080, "", "")),
			existing: []*corev1.Pod{mkPod("e", hostPort(8080, "", "10.0.0.1"), on("n1"))},
			want:     map[string]int{reasonNodePorts: 1},
		},
		{
			name:     "a deleted pod frees its port",
			pod:      mkPod("p", hostPort(8080, "", "")),
			existing: []*corev1.Pod{mkPod("e", hostPort(8080, "", ""), on("n1"), phase(corev1.PodFailed))},
		},
		{
			name: "nodeName names another node",
			pod:  mkPod("p", on("n2")),
			want: map[string]int{reasonNodeName: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cluster([]*corev1.Node{mkNode("n1")}, tt.existing...)
			got, _ := reasonsOf(s, tt.pod)
			if !maps.Equal(got, tt.want) {
				t.Errorf("reasons = %v, want %v", got, tt.want)
			}
		})
	}
}

// The FitError message is kube-scheduler's: reasons as "<count> <reason>",
// sorted as strings, joined, with a final period.
func TestFitErrorMessage(t *testing.T) {
	s := cluster([]*corev1.Node{
		mkNode("a", alloc("cpu", "1")),
		mkNode("b", alloc("cpu", "1")),
		mkNode("c", taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)),
		mkNode("d", cordoned),
		mkNode("e", ready(corev1.ConditionFalse)),
	})
	_, err := s.Schedule(mkPod("web", req("cpu", "2", "memory", "1Gi")))
	want := "0/5 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu, 2 node(s) had untolerated taint(s)."
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
	fe := err.(*FitError)
	if fe.Pod != "default/web" || fe.NumNodes != 5 {
		t.Errorf("FitError = %+v", fe)
	}
	if _, err := New().Schedule(mkPod("web")); err == nil || err.Error() != "no nodes available to schedule pods" {
		t.Errorf("empty cluster: %v", err)
	}
}
