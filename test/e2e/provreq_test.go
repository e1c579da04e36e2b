package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// The gang area: one instance type in one zone, on-demand, so the
// simulated AWS's capacity for it is exactly what the step sets.
const (
	gangPool = "gang"
	gangType = reservedType
	gangZone = reservedZone
	gangPods = 20
	// gangPodCPU: one pod per m5.xlarge (3.92 cpu allocatable).
	gangPodCPU = reservedPodCPU
)

// provisioningRequestAtomic: a best-effort-atomic-scale-up
// ProvisioningRequest for 20 pods. With capacity, all 20 nodes launch,
// the request is Provisioned and the 20 pods, created only then (as Kueue
// does), all run on them. Where the simulated AWS can only give 15
// instances, nothing is kept: the request is Failed with the reason and
// every claim it launched is rolled back.
func provisioningRequestAtomic(t *testing.T) {
	c, p := fleetCopy(t, gangPool, gangPool, gangPool, "10s")
	var reqs []nsv1.NodeSelectorRequirementWithMinValues
	for _, r := range p.Spec.Template.Spec.Requirements {
		switch r.Key {
		case corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, nsv1.LabelCapacityType, awsv1.LabelInstanceSize, awsv1.LabelInstanceFamily, awsv1.LabelInstanceCategory, awsv1.LabelInstanceGeneration:
			continue
		}
		r.MinValues = nil
		reqs = append(reqs, r)
	}
	in := func(key string, values ...string) nsv1.NodeSelectorRequirementWithMinValues {
		return nsv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	p.Spec.Template.Spec.Requirements = append(reqs, in(corev1.LabelInstanceTypeStable, gangType),
		in(corev1.LabelTopologyZone, gangZone), in(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand))
	createAreaPool(t, 3*time.Minute, c, p)
	t.Cleanup(func() { lab.World.SetCapacity(gangType, gangZone, fakeaws.CapacityOnDemand, 1000) })

	spec := corev1.PodSpec{
		NodeSelector:                  map[string]string{"fleet": gangPool},
		TerminationGracePeriodSeconds: ptr.To(int64(5)),
		Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(gangPodCPU), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
	}
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gangPool},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": gangPool}}, Spec: spec}}
	if err := kube().Create(ctx(), tmpl); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube().Delete(ctx(), tmpl) })

	// With capacity: all or nothing gives all.
	ok := request(t, "gang-fits")
	waitFor(t, 4*time.Minute, "the request Provisioned", requestCondition(ok, prv1.ConditionProvisioned, metav1.ConditionTrue))
	claims := claimsOf(t, gangPool)
	if len(claims) != gangPods {
		t.Fatalf("%d nodeclaims for the request, want %d", len(claims), gangPods)
	}
	d := deployment(gangPool, gangPool, gangPods, gangPodCPU, "1Gi")
	d.Spec.Template.Annotations = map[string]string{prv1.AnnotationConsumeRequest: ok}
	if err := kube().Create(ctx(), d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the gang's 20 pods running", allRunning(t, gangPool, gangPods))
	if n := len(claimsOf(t, gangPool)); n != gangPods {
		t.Errorf("%d nodeclaims once the pods run, want the request's %d (nothing launched beside them)", n, gangPods)
	}
	if err := kube().Delete(ctx(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gangPool}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 4*time.Minute, "the gang pool drained", drained(t, gangPool))

	// The simulated AWS holds 15 instances of the only offering: nothing
	// is kept.
	lab.World.SetCapacity(gangType, gangZone, fakeaws.CapacityOnDemand, 15)
	short := request(t, "gang-short")
	waitFor(t, 4*time.Minute, "the request Failed", requestCondition(short, prv1.ConditionFailed, metav1.ConditionTrue))
	pr := &prv1.ProvisioningRequest{}
	if err := kube().Get(ctx(), types.NamespacedName{Namespace: ns, Name: short}, pr); err != nil {
		t.Fatal(err)
	}
	failed := meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionFailed)
	if failed.Reason == "" || failed.Message == "" {
		t.Errorf("Failed condition %+v names no reason", failed)
	}
	t.Logf("15 instances for 20: Failed %s: %s", failed.Reason, failed.Message)
	if p := meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionProvisioned); p != nil && p.Status == metav1.ConditionTrue {
		t.Errorf("the short request is also Provisioned: %+v", p)
	}
	waitFor(t, 3*time.Minute, "every claim of the short request rolled back", drained(t, gangPool))
}

// request creates an atomic ProvisioningRequest for the gang's pods.
func request(t *testing.T, name string) string {
	t.Helper()
	pr := &prv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: prv1.ProvisioningRequestSpec{ProvisioningClassName: prv1.ClassAtomicScaleUp,
			PodSets: []prv1.PodSet{{PodTemplateRef: prv1.Reference{Name: gangPool}, Count: gangPods}}}}
	if err := kube().Create(ctx(), pr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube().Delete(ctx(), pr) })
	return name
}

func requestCondition(name, cond string, want metav1.ConditionStatus) func() error {
	return func() error {
		pr := &prv1.ProvisioningRequest{}
		if err := kube().Get(ctx(), types.NamespacedName{Namespace: ns, Name: name}, pr); err != nil {
			return err
		}
		c := meta.FindStatusCondition(pr.Status.Conditions, cond)
		if c == nil || c.Status != want {
			var have []string
			for _, x := range pr.Status.Conditions {
				have = append(have, fmt.Sprintf("%s=%s (%s: %s)", x.Type, x.Status, x.Reason, x.Message))
			}
			return fmt.Errorf("%s not %s; conditions: %s", cond, want, strings.Join(have, "; "))
		}
		return nil
	}
}
