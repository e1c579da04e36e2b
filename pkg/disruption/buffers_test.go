package disruption

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

func bufferPods(n int32, cpu string) []*corev1.Pod {
	b := &cbv1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "warm"}}
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	return provisioning.BufferPods(b, tmpl, n)
}

// A buffer's room is no waste: an empty node holding it stays, and an
// underused node is not consolidated into it.
func TestBufferRoomIsKept(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	tests := []struct {
		name   string
		build  func(w *world) []*corev1.Pod
		want   []string
		wantNo string
	}{
		{
			name: "without a buffer the empty node goes",
			build: func(w *world) []*corev1.Pod {
				w.node("p", "medium", "zone-a", od)
				return nil
			},
			want: []string{"Emptiness[p-01]"},
		},
		{
			name: "an empty node holding buffer room stays",
			build: func(w *world) []*corev1.Pod {
				w.node("p", "medium", "zone-a", od)
				return bufferPods(3, "1")
			},
		},
		{
			name: "only the node the buffer needs stays",
			build: func(w *world) []*corev1.Pod {
				w.node("p", "medium", "zone-a", od)
				w.node("p", "medium", "zone-a", od)
				return bufferPods(3, "1")
			},
			// The buffer pods spread over both; p-02's fits in p-01's room.
			want: []string{"SingleNodeConsolidation[p-02]"},
		},
		{
			name: "pods are not consolidated into buffer room",
			build: func(w *world) []*corev1.Pod {
				w.node("p", "medium", "zone-a", od)
				b := w.node("p", "small", "zone-a", od)
				w.pod(b, "1")
				return bufferPods(3, "1")
			},
			wantNo: "p-02",
		},
		{
			name: "a PDB over the buffer's labels blocks nothing",
			build: func(w *world) []*corev1.Pod {
				w.node("p", "medium", "zone-a", od, claimAnnotation(nsv1.AnnotationNodePoolHash, "old"))
				w.pdb("web", 0, map[string]string{"app": "web"})
				return bufferPods(1, "1")
			},
			want: []string{"Drift[p-01]+1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(pool("p"))
			pods := tt.build(w)
			p, err := Compute(w.input(func(in *Input) { in.BufferPods = pods }))
			if err != nil {
				t.Fatal(err)
			}
			got := summaries(p)
			if tt.wantNo != "" {
				for _, s := range got {
					if strings.Contains(s, tt.wantNo) {
						t.Fatalf("actions %v disrupt %s", got, tt.wantNo)
					}
				}
				return
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("actions %v, want %v; skipped %+v", got, tt.want, p.Skipped)
			}
		})
	}
}
