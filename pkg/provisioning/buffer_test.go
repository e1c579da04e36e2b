package provisioning

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

func chunk(cpu string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

func buffer(mutate ...func(*cbv1.CapacityBuffer)) *cbv1.CapacityBuffer {
	b := &cbv1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "buf"}}
	for _, m := range mutate {
		m(b)
	}
	return b
}

func i32(v int32) *int32 { return &v }

func TestResolveBuffer(t *testing.T) {
	other := "buffer.gke.io/standby-capacity"
	burst := func() []time.Time {
		var out []time.Time
		// 10 pods at once, every 5 minutes for the hour: 12 bursts.
		for k := range 12 {
			for range 10 {
				out = append(out, now.Add(-time.Duration(k)*5*time.Minute-time.Second))
			}
		}
		return out
	}
	tests := []struct {
		name       string
		b          *cbv1.CapacityBuffer
		src        BufferSource
		want       int32
		wantReady  metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "replicas", b: buffer(func(b *cbv1.CapacityBuffer) { b.Spec.Replicas = i32(10) }),
			src: BufferSource{Template: chunk("500m")}, want: 10, wantReady: metav1.ConditionTrue},
		{name: "percentage of the workload, rounded up", b: buffer(func(b *cbv1.CapacityBuffer) { b.Spec.Percentage = i32(20) }),
			src: BufferSource{Template: chunk("500m"), ScalableReplicas: i32(11)}, want: 3, wantReady: metav1.ConditionTrue},
		{name: "percentage is at least one chunk", b: buffer(func(b *cbv1.CapacityBuffer) { b.Spec.Percentage = i32(1) }),
			src: BufferSource{Template: chunk("500m"), ScalableReplicas: i32(5)}, want: 1, wantReady: metav1.ConditionTrue},
		{name: "the larger of replicas and percentage", b: buffer(func(b *cbv1.CapacityBuffer) { b.Spec.Replicas = i32(2); b.Spec.Percentage = i32(50) }),
			src: BufferSource{Template: chunk("500m"), ScalableReplicas: i32(10)}, want: 5, wantReady: metav1.ConditionTrue},
		{name: "percentage without a workload is ignored and said so", b: buffer(func(b *cbv1.CapacityBuffer) { b.Spec.Replicas = i32(2); b.Spec.Percentage = i32(50) }),
			src: BufferSource{Template: chunk("500m")}, want: 2, wantReady: metav1.ConditionTrue, wantMsg: "percentage is ignored"},
		{name: "limits alone: as many as fit", b: buffer(func(b *cbv1.CapacityBuffer) {
			b.Spec.Limits = &cbv1.ResourceList{"cpu": resource.MustParse("3")}
		}), src: BufferSource{Template: chunk("500m")}, want: 6, wantReady: metav1.ConditionTrue},
		{name: "limits cap replicas", b: buffer(func(b *cbv1.CapacityBuffer) {
			b.Spec.Replicas = i32(10)
			b.Spec.Limits = &cbv1.ResourceList{"cpu": resource.MustParse("2")}
		}), src: BufferSource{Template: chunk("500m")}, want: 4, wantReady: metav1.ConditionTrue, wantMsg: "limits allow 4"},
		{name: "auto keeps the 95th-percentile burst", b: buffer(func(b *cbv1.CapacityBuffer) {
			b.Spec.Replicas = i32(0)
			b.Annotations = map[string]string{cbv1.AnnotationSizing: cbv1.SizingAuto}
		}), src: BufferSource{Template: chunk("500m"), Arrivals: burst()}, want: 10, wantReady: metav1.ConditionTrue, wantMsg: "auto: 120 pods"},
		{name: "auto with replicas as a floor", b: buffer(func(b *cbv1.CapacityBuffer) {
			b.Spec.Replicas = i32(3)
			b.Annotations = map[string]string{cbv1.AnnotationSizing: cbv1.SizingAuto}
		}), src: BufferSource{Template: chunk("500m")}, want: 3, wantReady: metav1.ConditionTrue},
		{name: "unknown sizing is said so", b: buffer(func(b *cbv1.CapacityBuffer) {
			b.Spec.Replicas = i32(1)
			b.Annotations = map[string]string{cbv1.AnnotationSizing: "magic"}
		}), src: BufferSource{Template: chunk("500m")}, want: 1, wantReady: metav1.ConditionTrue, wantMsg: `"magic" is not a sizing`},
		{name: "another strategy keeps nothing", b: buffer(func(b *cbv1.CapacityBuffer) { b.Spec.ProvisioningStrategy = &other; b.Spec.Replicas = i32(1) }),
			src: BufferSource{Template: chunk("500m")}, want: 0, wantReady: metav1.ConditionFalse, wantReason: "UnsupportedStrategy"},
		{name: "missing template", b: buffer(func(b *cbv1.CapacityBuffer) { b.Spec.Replicas = i32(1) }),
			src: BufferSource{Problem: "PodTemplate ns/x does not exist"}, want: 0, wantReady: metav1.ConditionFalse, wantReason: "TemplateNotFound", wantMsg: "ns/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ResolveBuffer(tt.b, tt.src, now)
			if r.Replicas != tt.want || int32(len(r.Pods)) != tt.want {
				t.Errorf("replicas %d pods %d, want %d", r.Replicas, len(r.Pods), tt.want)
			}
			if r.Ready.Type != cbv1.ConditionReadyForProvisioning || r.Ready.Status != tt.wantReady ||
				(tt.wantReason != "" && r.Ready.Reason != tt.wantReason) || !strings.Contains(r.Ready.Message, tt.wantMsg) {
				t.Errorf("condition %+v, want %s %s %q", r.Ready, tt.wantReady, tt.wantReason, tt.wantMsg)
			}
			for _, p := range r.Pods {
				if !IsBufferPod(p) || p.Namespace != "ns" || p.Labels["app"] != "web" || p.UID == "" {
					t.Errorf("virtual pod %s/%s uid %q labels %v annotations %v", p.Namespace, p.Name, p.UID, p.Labels, p.Annotations)
				}
			}
		})
	}
}

func TestAutoReplicas(t *testing.T) {
	at := func(ago ...time.Duration) []time.Time {
		var out []time.Time
		for _, a := range ago {
			out = append(out, now.Add(-a))
		}
		return out
	}
	many := func(n int, ago time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = ago
		}
		return out
	}
	var steady []time.Duration
	for s := time.Duration(0); s < time.Hour; s += 10 * time.Second {
		steady = append(steady, s+time.Second/2)
	}
	tests := []struct {
		name     string
		arrivals []time.Time
		window   time.Duration
		since    time.Time
		want     int32
	}{
		{name: "nothing arrived", want: 0},
		{name: "one rare burst is under the 95th percentile", arrivals: at(many(20, 30*time.Minute)...), window: time.Minute, want: 0},
		// 4 bursts of 10 × 60 s windows = 240 of 3600 windows hold 10: over 5 %.
		{name: "bursts every quarter hour", arrivals: at(append(append(append(many(10, 5*time.Minute), many(10, 20*time.Minute)...), many(10, 35*time.Minute)...), many(10, 50*time.Minute)...)...), window: time.Minute, want: 10},
		{name: "a steady trickle keeps its window's worth", arrivals: at(steady...), window: time.Minute, want: 6},
		{name: "arrivals older than an hour do not count", arrivals: at(many(50, 2*time.Hour)...), window: time.Minute, want: 0},
		// Created 10 minutes ago: one burst fills 60 of 600 windows.
		{name: "a young buffer counts only the windows it saw", arrivals: at(many(10, 5*time.Minute)...), window: time.Minute, since: now.Add(-10 * time.Minute), want: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AutoReplicas(tt.arrivals, tt.since, now, tt.window); got != tt.want {
				t.Errorf("AutoReplicas = %d, want %d", got, tt.want)
			}
		})
	}
}

// Buffer pods come second: they get the room the real pods' plan leaves,
// on existing nodes and on the plan's new claims, and new claims beyond.
func TestBufferInput(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := pool("dyn")
	p.Spec.Template.Spec.Requirements = staticPoolReqs()
	sp := scheduling.NodePoolFromAPI(p, cat.Types())
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	existing := &scheduling.ExistingNode{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1"}, Allocatable: alloc}
	real := func(name, cpu string) *corev1.Pod {
		pod := pendingPod(name)
		pod.Spec.Containers = chunk(cpu).Spec.Containers
		return pod
	}
	in := scheduling.Input{Pods: []*corev1.Pod{real("r1", "1500m")}, Nodes: []*scheduling.ExistingNode{existing}, NodePools: []*scheduling.NodePool{sp}}
	plan, err := scheduling.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Nominations) != 1 || len(plan.NewClaims) != 0 {
		t.Fatalf("real pod: %d nominations %d claims, want it on n1", len(plan.Nominations), len(plan.NewClaims))
	}
	b := buffer(func(b *cbv1.CapacityBuffer) { b.Spec.Replicas = i32(2) })
	virtual := ResolveBuffer(b, BufferSource{Template: chunk("1")}, now).Pods
	bp, err := scheduling.Solve(BufferInput(in, plan, virtual))
	if err != nil {
		t.Fatal(err)
	}
	if len(bp.Nominations) != 0 || len(bp.NewClaims) != 1 || len(bp.NewClaims[0].Pods) != 2 {
		t.Fatalf("buffer pods: %d nominations, %d claims; want both on one new claim, n1's room being the real pod's", len(bp.Nominations), len(bp.NewClaims))
	}
	if len(existing.Pods) != 0 {
		t.Error("BufferInput changed the caller's node")
	}
}

func staticPoolReqs() []nsv1.NodeSelectorRequirementWithMinValues {
	return []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge"}},
	}
}
