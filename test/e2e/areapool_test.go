package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// fleetCopy is the lab's spot-fleet EC2NodeClass and NodePool copied for a
// step's own area: the class named class, the pool named pool with its
// nodes labelled fleet=<fleet>, no weight, only empty nodes consolidated
// (after consolidateAfter), and, when sizes are given, only those instance
// sizes. The caller adjusts them further and creates them (createAreaPool).
func fleetCopy(t *testing.T, class, pool, fleet, consolidateAfter string, sizes ...string) (*awsv1.EC2NodeClass, *nsv1.NodePool) {
	t.Helper()
	fc := &awsv1.EC2NodeClass{}
	if err := kube().Get(ctx(), types.NamespacedName{Name: "spot-fleet"}, fc); err != nil {
		t.Fatal(err)
	}
	fp := &nsv1.NodePool{}
	if err := kube().Get(ctx(), types.NamespacedName{Name: spotPool}, fp); err != nil {
		t.Fatal(err)
	}
	c := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: *fc.Spec.DeepCopy()}
	p := &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: *fp.Spec.DeepCopy()}
	p.Spec.Template.ObjectMeta.Labels = map[string]string{"fleet": fleet}
	p.Spec.Template.Spec.NodeClassRef.Name = class
	if len(sizes) > 0 {
		for i, r := range p.Spec.Template.Spec.Requirements {
			if r.Key == awsv1.LabelInstanceSize {
				p.Spec.Template.Spec.Requirements[i].Operator = corev1.NodeSelectorOpIn
				p.Spec.Template.Spec.Requirements[i].Values = sizes
			}
		}
	}
	p.Spec.Weight = nil
	p.Spec.Disruption.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmpty
	p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration(consolidateAfter)
	return c, p
}

// createAreaPool creates objs (the step's namespace, class and pool; ones
// already there are kept) and, when the test ends, deletes the class and
// pool and waits up to within until they are gone: the next step may create
// them again, so they must be gone, not going.
func createAreaPool(t *testing.T, within time.Duration, c *awsv1.EC2NodeClass, p *nsv1.NodePool, objs ...client.Object) {
	t.Helper()
	for _, o := range append(objs, c, p) {
		if err := kube().Create(ctx(), o); client.IgnoreAlreadyExists(err) != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(kube().Delete(ctx(), p))
		_ = client.IgnoreNotFound(kube().Delete(ctx(), c))
		waitFor(t, within, "the NodePool "+p.Name+" and EC2NodeClass "+c.Name+" deleted", func() error {
			for _, o := range []client.Object{&nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p.Name}},
				&awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: c.Name}}} {
				if err := kube().Get(ctx(), client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T %s still there (%v)", o, o.GetName(), err)
				}
			}
			return nil
		})
	})
}
