package nodepool

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// Controller reconciles NodePool status.
type Controller struct {
	kube    client.Client
	clk     clock.Clock
	metrics *metrics.Metrics
}

// New builds the controller.
func New(kube client.Client, clk clock.Clock, m *metrics.Metrics) *Controller {
	return &Controller{kube: kube, clk: clk, metrics: m}
}

// Controller declares the controller: NodePools, their NodeClaims and
// EC2NodeClasses.
func (c *Controller) Controller() operator.Controller {
	return operator.Controller{
		Name: "nodepool.status",
		For:  &nsv1.NodePool{},
		Watches: []operator.Watch{
			{Object: &nsv1.NodeClaim{}, Map: func(_ context.Context, o client.Object) []reconcile.Request {
				if p := o.GetLabels()[nsv1.LabelNodePool]; p != "" {
					return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p}}}
				}
				return nil
			}},
			{Object: &awsv1.EC2NodeClass{}, Map: c.poolsForClass},
		},
		Reconciler: c,
	}
}

func (c *Controller) poolsForClass(ctx context.Context, o client.Object) []reconcile.Request {
	var pools nsv1.NodePoolList
	if err := c.kube.List(ctx, &pools); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range pools.Items {
		if ref := p.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	return out
}

// Reconcile recomputes the pool's status.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool := &nsv1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := pool.DeepCopy()
	var claims nsv1.NodeClaimList
	if err := c.kube.List(ctx, &claims, client.MatchingLabels{nsv1.LabelNodePool: pool.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of nodepool %s: %w", pool.Name, err)
	}
	items := make([]*nsv1.NodeClaim, len(claims.Items))
	for i := range claims.Items {
		items[i] = &claims.Items[i]
	}
	pool.Status.Resources, pool.Status.Nodes = provisioning.Usage(items)
	now := metav1.NewTime(c.clk.Now())
	lifecycle.SetCondition(&pool.Status.Conditions, lifecycle.Condition(nsv1.ConditionValidationSucceeded, true, "", ""), pool.Generation, now)
	classReady, err := c.nodeClassReady(ctx, pool)
	if err != nil {
		return reconcile.Result{}, err
	}
	lifecycle.SetCondition(&pool.Status.Conditions, classReady, pool.Generation, now)
	lifecycle.SetCondition(&pool.Status.Conditions, lifecycle.PoolReady(pool.Status.Conditions), pool.Generation, now)
	c.export(pool)
	if equality.Semantic.DeepEqual(base.Status, pool.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kube.Status().Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool %s status: %w", pool.Name, err))
	}
	return reconcile.Result{}, nil
}

// nodeClassReady mirrors the referenced node class's Ready condition. Node
// classes of other groups are trusted as ready: their provider reports.
func (c *Controller) nodeClassReady(ctx context.Context, pool *nsv1.NodePool) (metav1.Condition, error) {
	ref := pool.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return lifecycle.Condition(nsv1.ConditionNodeClassReady, true, "", ""), nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return lifecycle.Condition(nsv1.ConditionNodeClassReady, false, "NodeClassNotFound",
				fmt.Sprintf("EC2NodeClass %s does not exist", ref.Name)), nil
		}
		return metav1.Condition{}, fmt.Errorf("getting EC2NodeClass %s: %w", ref.Name, err)
	}
	ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionReady)
	switch {
	case ready == nil:
		// No controller resolves this class yet; a class the API accepted
		// is launchable and the provider reports resolution errors at launch.
		return lifecycle.Condition(nsv1.ConditionNodeClassReady, true, "", ""), nil
	case ready.Status != metav1.ConditionTrue:
		return lifecycle.Condition(nsv1.ConditionNodeClassReady, false, ready.Reason,
			fmt.Sprintf("EC2NodeClass %s is not ready: %s", ref.Name, ready.Message)), nil
	}
	return lifecycle.Condition(nsv1.ConditionNodeClassReady, true, "", ""), nil
}

// export sets the pool's usage and limit gauges; its cost is exported by
// pkg/controllers/cost with the rest of the fleet's.
func (c *Controller) export(pool *nsv1.NodePool) {
	for name, q := range pool.Status.Resources {
		c.metrics.NodePoolUsage.WithLabelValues(pool.Name, string(name)).Set(q.AsApproximateFloat64())
	}
	c.metrics.NodePoolUsage.WithLabelValues(pool.Name, string(nsv1.ResourceNodes)).Set(float64(pool.Status.Nodes))
	for name, q := range pool.Spec.Limits {
		c.metrics.NodePoolLimit.WithLabelValues(pool.Name, string(name)).Set(q.AsApproximateFloat64())
	}
}
