package e2e

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/labkit"
)

const (
	spotPool = "spot-fleet"
	flexPool = "flex"
	ns       = "lab"
)

// applyFleet creates the example spot fleet (examples/spot-fleet.yaml),
// pointed at the lab's subnets, plus a pool that may fall back to on-demand,
// and the lab namespace. Lab changes to the example: the discovery tag names
// the lab cluster, empty nodes go after 5 s instead of 1 m, and half the
// pool may be disrupted at once instead of 10 %, so scale-down fits CI time,
// and the memory limit is 4000Gi instead of 1000Gi. 1,000 pods of 500m fill
// 500 cpu, and the cheapest capacity for that (c6g, 2 GiB per vCPU) brings
// about 1,000Gi of memory with it; a claim counts against the limit at the
// largest of its launch options (whichever EC2 picks, the limit holds), and
// a claim with 15 spot options over three families lists m and r types of
// 4–8 GiB per vCPU. Under 2000Gi the one 1,000-pod cycle had to trim its
// claims to 7–12 options each (34 claims instead of 8 with 15); under the
// example's 1000Gi it could not place them all. Limits are tested on their
// own (limitsHold).
func applyFleet(ctx context.Context, kube client.Client) error {
	class, pool, err := labkit.ExampleFleet(labCluster)
	if err != nil {
		return err
	}
	labTuning(pool)

	flex := pool.DeepCopy()
	flex.Name = flexPool
	flex.Spec.Template.ObjectMeta.Labels = map[string]string{"fleet": "flex"}
	flex.Spec.Weight = ptr.To(int32(10))
	for i, r := range flex.Spec.Template.Spec.Requirements {
		if r.Key == nsv1.LabelCapacityType {
			flex.Spec.Template.Spec.Requirements[i].Values = []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand}
		}
		if r.Key == awsv1.LabelInstanceFamily {
			// Few families, so a test can exhaust every spot pool.
			flex.Spec.Template.Spec.Requirements[i].Values = []string{"m5", "c5", "r5"}
			flex.Spec.Template.Spec.Requirements[i].MinValues = ptr.To(1)
		}
	}
	for _, o := range []client.Object{class, pool, flex, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}} {
		if err := kube.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func labTuning(pool *nsv1.NodePool) {
	pool.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("5s")
	pool.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "50%"}}
	pool.Spec.Limits[corev1.ResourceMemory] = resource.MustParse("4000Gi")
}

// deployment is a pause Deployment whose pods select a pool's template label.
func deployment(name, fleet string, replicas int32, cpu, mem string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{"fleet": fleet},
					TerminationGracePeriodSeconds: ptr.To(int64(5)),
					Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}},
				},
			},
		},
	}
}

func isFamily(instanceType string, families ...string) bool {
	for _, f := range families {
		if strings.HasPrefix(instanceType, f+".") {
			return true
		}
	}
	return false
}
