package nodepool

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// InstanceTypes is the cloud's view of what a pool's node class can launch
// (cloudprovider.CloudProvider satisfies it).
type InstanceTypes interface {
	GetInstanceTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error)
}

// revalidate is how often a pool is validated again: offerings and prices
// move with the live catalog even when no object changes.
const revalidate = 5 * time.Minute

// Controller reconciles NodePool status.
type Controller struct {
	kube    client.Client
	types   InstanceTypes
	clk     clock.Clock
	metrics *metrics.Metrics

	mu sync.Mutex
	// validated are the last validations by pool name: a pool reconciles on
	// every change of its claims, and checking its requirements against
	// hundreds of instance types each time cost more than the rest of the
	// reconcile. Reused while the pool's generation and its class's
	// resourceVersion are unchanged, for at most revalidate.
	validated map[string]validation
	// exported are the usage and limit series set per pool, so a resource
	// dropped from a pool's limits or usage, or a deleted pool, leaves no
	// stale series behind.
	exported map[string]poolSeries
}

// poolSeries are the resource labels of one pool's usage and limit gauges.
type poolSeries struct{ usage, limit map[string]bool }

type validation struct {
	uid        types.UID
	generation int64
	classRV    string
	at         time.Time
	cond       metav1.Condition
}

// New builds the controller; types validates pools against what their node
// class can launch.
func New(kube client.Client, its InstanceTypes, clk clock.Clock, m *metrics.Metrics) *Controller {
	return &Controller{kube: kube, types: its, clk: clk, metrics: m, validated: map[string]validation{}, exported: map[string]poolSeries{}}
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
		if client.IgnoreNotFound(err) == nil {
			c.mu.Lock()
			delete(c.validated, req.Name)
			c.mu.Unlock()
			c.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := pool.DeepCopy()
	var claims nsv1.NodeClaimList
	// Read only (Usage), on every claim change: the cache's own claims.
	if err := c.kube.List(ctx, &claims, client.MatchingLabels{nsv1.LabelNodePool: pool.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of nodepool %s: %w", pool.Name, err)
	}
	items := make([]*nsv1.NodeClaim, len(claims.Items))
	for i := range claims.Items {
		items[i] = &claims.Items[i]
	}
	now := metav1.NewTime(c.clk.Now())
	classReady, classRV, err := c.nodeClassReady(ctx, pool)
	if err != nil {
		return reconcile.Result{}, err
	}
	// The usage the solver counts against the pool's limits: an in-flight
	// claim counts its largest instance type, which needs the pool's types
	// (cached by the provider); without them it counts its requests.
	var its []*catalog.InstanceType
	if classReady.Status == metav1.ConditionTrue && provisioning.NeedsTypes(items) {
		its, _ = c.types.GetInstanceTypes(ctx, pool)
	}
	pool.Status.Resources, pool.Status.Nodes = provisioning.Usage(items, its)
	lifecycle.SetCondition(&pool.Status.Conditions, classReady, pool.Generation, now)
	valid, err := c.validateOnce(ctx, pool, classReady, classRV)
	if err != nil {
		return reconcile.Result{}, err
	}
	lifecycle.SetCondition(&pool.Status.Conditions, valid, pool.Generation, now)
	lifecycle.SetCondition(&pool.Status.Conditions, lifecycle.CloudAccountReady(items), pool.Generation, now)
	lifecycle.SetCondition(&pool.Status.Conditions, lifecycle.PoolReady(pool.Status.Conditions), pool.Generation, now)
	c.export(pool)
	if equality.Semantic.DeepEqual(base.Status, pool.Status) {
		return reconcile.Result{RequeueAfter: revalidate}, nil
	}
	if err := statuspatch.Patch(ctx, c.kube, base, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool %s status: %w", pool.Name, err))
	}
	return reconcile.Result{RequeueAfter: revalidate}, nil
}

// validateOnce is validate, reusing the pool's last validation while
// neither the pool's spec nor its class changed, for at most revalidate.
func (c *Controller) validateOnce(ctx context.Context, pool *nsv1.NodePool, classReady metav1.Condition, classRV string) (metav1.Condition, error) {
	now := c.clk.Now()
	c.mu.Lock()
	last, ok := c.validated[pool.Name]
	c.mu.Unlock()
	if ok && classReady.Status == metav1.ConditionTrue && last.uid == pool.UID && last.generation == pool.Generation && last.classRV == classRV && now.Sub(last.at) < revalidate {
		return last.cond, nil
	}
	cond, err := c.validate(ctx, pool, classReady)
	if err != nil {
		return cond, err
	}
	c.mu.Lock()
	if classReady.Status == metav1.ConditionTrue && cond.Status != metav1.ConditionUnknown {
		c.validated[pool.Name] = validation{uid: pool.UID, generation: pool.Generation, classRV: classRV, at: now, cond: cond}
	} else {
		delete(c.validated, pool.Name)
	}
	c.mu.Unlock()
	return cond, nil
}

// validate is ValidationSucceeded: the pool's requirements checked against
// the instance types its node class offers (provisioning.ValidatePool).
// While the node class is not ready there is nothing to check against, so
// the condition is Unknown.
func (c *Controller) validate(ctx context.Context, pool *nsv1.NodePool, classReady metav1.Condition) (metav1.Condition, error) {
	const t = nsv1.ConditionValidationSucceeded
	if classReady.Status != metav1.ConditionTrue {
		return metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: "AwaitingNodeClass",
			Message: "the pool is validated against its node class's instance types once the node class is ready"}, nil
	}
	types, err := c.types.GetInstanceTypes(ctx, pool)
	if err != nil {
		if cloudprovider.IsNodeClassNotReady(err) {
			return metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: "AwaitingNodeClass", Message: err.Error()}, nil
		}
		return metav1.Condition{}, fmt.Errorf("reading the instance types of nodepool %s: %w", pool.Name, err)
	}
	if reason, msg := provisioning.ValidatePool(pool, types); reason != "" {
		return lifecycle.Condition(t, false, reason, msg), nil
	}
	return lifecycle.Condition(t, true, "", ""), nil
}

// nodeClassReady mirrors the referenced node class's Ready condition. This
// build launches EC2NodeClasses only, so any other kind is not ready, and a
// class no controller has resolved yet is not ready either.
// It also returns the class's resourceVersion ("" without one).
func (c *Controller) nodeClassReady(ctx context.Context, pool *nsv1.NodePool) (metav1.Condition, string, error) {
	ref := pool.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return lifecycle.Condition(nsv1.ConditionNodeClassReady, false, "UnsupportedNodeClass",
			fmt.Sprintf("nodeClassRef must name an EC2NodeClass of group %s; this controller launches nothing else", awsv1.Group)), "", nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return lifecycle.Condition(nsv1.ConditionNodeClassReady, false, "NodeClassNotFound",
				fmt.Sprintf("EC2NodeClass %s does not exist", ref.Name)), "", nil
		}
		return metav1.Condition{}, "", fmt.Errorf("getting EC2NodeClass %s: %w", ref.Name, err)
	}
	ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionReady)
	switch {
	case ready == nil:
		return lifecycle.Condition(nsv1.ConditionNodeClassReady, false, "NodeClassNotResolved",
			fmt.Sprintf("EC2NodeClass %s has not been resolved yet (its subnets, security groups, AMIs and instance profile)", ref.Name)), nc.ResourceVersion, nil
	case ready.Status != metav1.ConditionTrue:
		return lifecycle.Condition(nsv1.ConditionNodeClassReady, false, ready.Reason,
			fmt.Sprintf("EC2NodeClass %s is not ready: %s", ref.Name, ready.Message)), nc.ResourceVersion, nil
	}
	return lifecycle.Condition(nsv1.ConditionNodeClassReady, true, "", ""), nc.ResourceVersion, nil
}

// export sets the pool's usage and limit gauges and deletes the series of
// resources it no longer reports; its cost is exported by
// pkg/controllers/cost with the rest of the fleet's.
func (c *Controller) export(pool *nsv1.NodePool) {
	now := poolSeries{usage: map[string]bool{}, limit: map[string]bool{}}
	for name, q := range pool.Status.Resources {
		c.metrics.NodePoolUsage.WithLabelValues(pool.Name, string(name)).Set(q.AsApproximateFloat64())
		now.usage[string(name)] = true
	}
	c.metrics.NodePoolUsage.WithLabelValues(pool.Name, string(nsv1.ResourceNodes)).Set(float64(pool.Status.Nodes))
	now.usage[string(nsv1.ResourceNodes)] = true
	for name, q := range pool.Spec.Limits {
		c.metrics.NodePoolLimit.WithLabelValues(pool.Name, string(name)).Set(q.AsApproximateFloat64())
		now.limit[string(name)] = true
	}
	c.mu.Lock()
	before := c.exported[pool.Name]
	c.exported[pool.Name] = now
	c.mu.Unlock()
	for r := range before.usage {
		if !now.usage[r] {
			c.metrics.NodePoolUsage.DeleteLabelValues(pool.Name, r)
		}
	}
	for r := range before.limit {
		if !now.limit[r] {
			c.metrics.NodePoolLimit.DeleteLabelValues(pool.Name, r)
		}
	}
}

// forget deletes a deleted pool's usage and limit series, also those a
// previous process set (DeletePartialMatch needs no record of them).
func (c *Controller) forget(pool string) {
	c.mu.Lock()
	delete(c.exported, pool)
	c.mu.Unlock()
	c.metrics.NodePoolUsage.DeletePartialMatch(prometheus.Labels{metrics.LabelNodePool: pool})
	c.metrics.NodePoolLimit.DeletePartialMatch(prometheus.Labels{metrics.LabelNodePool: pool})
}
