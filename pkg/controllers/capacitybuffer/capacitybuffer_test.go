package capacitybuffer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

func template(labels map[string]string, cpu string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

// The controller resolves a buffer into virtual pods in the cluster state,
// writes replicas, template and ReadyForProvisioning, and asks for a
// provisioning cycle; a missing template is reported, not guessed.
func TestReconcile(t *testing.T) {
	ctx := context.Background()
	ns := "default"
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chunk-" + suffix}, Template: template(map[string]string{"app": "web-" + suffix}, "500m")}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-" + suffix}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](10), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dep-" + suffix}},
		Template: template(map[string]string{"app": "dep-" + suffix}, "250m")}}
	if err := h.Direct.Create(ctx, pt); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pt)
	if err := h.Direct.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, dep)
	tests := []struct {
		name       string
		spec       cbv1.CapacityBufferSpec
		want       int32
		wantReady  metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "podTemplateRef with replicas", spec: cbv1.CapacityBufferSpec{PodTemplateRef: &cbv1.LocalObjectRef{Name: pt.Name}, Replicas: ptr.To[int32](4)},
			want: 4, wantReady: metav1.ConditionTrue, wantMsg: "4 chunks"},
		{name: "scalableRef with a percentage", spec: cbv1.CapacityBufferSpec{ScalableRef: &cbv1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: dep.Name}, Percentage: ptr.To[int32](30)},
			want: 3, wantReady: metav1.ConditionTrue},
		{name: "missing template", spec: cbv1.CapacityBufferSpec{PodTemplateRef: &cbv1.LocalObjectRef{Name: "nope-" + suffix}, Replicas: ptr.To[int32](1)},
			want: 0, wantReady: metav1.ConditionFalse, wantReason: "TemplateNotFound", wantMsg: "nope-" + suffix},
		{name: "unsupported kind", spec: cbv1.CapacityBufferSpec{ScalableRef: &cbv1.ScalableRef{APIGroup: "example.com", Kind: "Widget", Name: "w"}, Replicas: ptr.To[int32](1)},
			want: 0, wantReady: metav1.ConditionFalse, wantReason: "TemplateNotFound", wantMsg: "Nodesmith reads Deployments"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &cbv1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("buf-%s-%d", suffix, i)}, Spec: tt.spec}
			if err := h.Direct.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			h.Cached(t, b)
			cluster := state.NewCluster(h.Client, clock.RealClock{}, time.Minute)
			var triggered []string
			c := New(h.Client, cluster, clock.RealClock{}, func(k string) { triggered = append(triggered, k) })
			if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: b.Name}}); err != nil {
				t.Fatal(err)
			}
			got := &cbv1.CapacityBuffer{}
			if err := h.Direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: b.Name}, got); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, cbv1.ConditionReadyForProvisioning)
			if cond == nil || cond.Status != tt.wantReady || (tt.wantReason != "" && cond.Reason != tt.wantReason) || !strings.Contains(cond.Message, tt.wantMsg) {
				t.Fatalf("ReadyForProvisioning %+v, want %s %s %q", cond, tt.wantReady, tt.wantReason, tt.wantMsg)
			}
			if got.Status.Replicas == nil || *got.Status.Replicas != tt.want || got.Status.ProvisioningStrategy == nil || *got.Status.ProvisioningStrategy != cbv1.ActiveCapacity {
				t.Errorf("status replicas %v strategy %v, want %d and %s", got.Status.Replicas, got.Status.ProvisioningStrategy, tt.want, cbv1.ActiveCapacity)
			}
			pods := cluster.BufferPods()
			if int32(len(pods)) != tt.want || (tt.want > 0) != (len(triggered) == 1) {
				t.Errorf("%d virtual pods, %d triggers; want %d pods and a trigger when there are any", len(pods), len(triggered), tt.want)
			}
			for _, p := range pods {
				if !provisioning.IsBufferPod(p) {
					t.Errorf("pod %s is not marked as a buffer pod", p.Name)
				}
			}
			// Deleting the buffer forgets its pods.
			if err := h.Direct.Delete(ctx, got); err != nil {
				t.Fatal(err)
			}
			controllertest.Eventually(t, "cache drops the buffer", func() error {
				if err := h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: b.Name}, &cbv1.CapacityBuffer{}); err == nil {
					return fmt.Errorf("still cached")
				}
				return nil
			})
			if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: b.Name}}); err != nil {
				t.Fatal(err)
			}
			if n := len(cluster.BufferPods()); n != 0 {
				t.Errorf("%d virtual pods after the buffer was deleted", n)
			}
		})
	}
}

// The API server refuses what the upstream schema refuses.
func TestValidation(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		spec cbv1.CapacityBufferSpec
		want string
	}{
		{name: "both refs", spec: cbv1.CapacityBufferSpec{PodTemplateRef: &cbv1.LocalObjectRef{Name: "a"}, ScalableRef: &cbv1.ScalableRef{Kind: "Deployment", Name: "b"}, Replicas: ptr.To[int32](1)},
			want: "set one of podTemplateRef and scalableRef, not both"},
		{name: "podTemplateRef without a size", spec: cbv1.CapacityBufferSpec{PodTemplateRef: &cbv1.LocalObjectRef{Name: "a"}},
			want: "needs replicas or limits"},
		{name: "negative replicas", spec: cbv1.CapacityBufferSpec{PodTemplateRef: &cbv1.LocalObjectRef{Name: "a"}, Replicas: ptr.To[int32](-1)},
			want: "spec.replicas"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &cbv1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("invalid-%d-%d", time.Now().UnixNano()%100000, i)}, Spec: tt.spec}
			if err := h.Direct.Create(ctx, b); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("create: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
