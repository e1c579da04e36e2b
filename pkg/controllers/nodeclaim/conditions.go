package nodeclaim

import (
	"context"
	"fmt"
	"slices"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// Conditions keeps each claim's Drifted and Consolidatable conditions as
// disruption.ConditionsOf decides them: when the claim, its pool or its node
// class changes, and when consolidateAfter passes. The planner does not
// read them (it decides from the same rules each plan); they are there for
// the user and the tools that read a Karpenter claim's conditions.
type Conditions struct {
	kube client.Client
	clk  clock.Clock
	// classes says whether EC2NodeClasses are served (their drift is
	// checked, and their changes watched).
	classes bool

	mu sync.Mutex
	// seen is, per pool and node class, the part of it the conditions
	// depend on as last mapped to its claims: a pool's status is written
	// at every launch, and each write would otherwise reconcile all its
	// claims.
	seen map[string]string
}

// NewConditions builds the controller; classes as in Conditions.
func NewConditions(kube client.Client, clk clock.Clock, classes bool) *Conditions {
	return &Conditions{kube: kube, clk: clk, classes: classes, seen: map[string]string{}}
}

// Controller declares it: NodeClaims, and the claims of a NodePool whose
// spec changed or of an EC2NodeClass whose spec or resolved AMIs, subnets
// or security groups changed.
func (c *Conditions) Controller() operator.Controller {
	watches := []operator.Watch{{Object: &nsv1.NodePool{}, Map: c.claimsOf(
		func(o client.Object) string { return fmt.Sprint(o.GetGeneration()) },
		func(cl *nsv1.NodeClaim, name string) bool { return cl.Labels[nsv1.LabelNodePool] == name })}}
	if c.classes {
		watches = append(watches, operator.Watch{Object: &awsv1.EC2NodeClass{}, Map: c.claimsOf(
			func(o client.Object) string {
				nc := o.(*awsv1.EC2NodeClass)
				return nsv1.HashJSON([]any{nc.Generation, nc.Status.AMIs, nc.Status.Subnets, nc.Status.SecurityGroups})
			},
			func(cl *nsv1.NodeClaim, name string) bool {
				return cl.Spec.NodeClassRef != nil && cl.Spec.NodeClassRef.Name == name
			})})
	}
	return operator.Controller{Name: "nodeclaim.disruption", For: &nsv1.NodeClaim{}, Watches: watches, Workers: 2, Reconciler: c}
}

// claimsOf maps an object to the claims match picks, when the part of it
// key returns differs from the last one mapped.
func (c *Conditions) claimsOf(key func(client.Object) string, match func(*nsv1.NodeClaim, string) bool) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		id := fmt.Sprintf("%T/%s", o, o.GetName())
		k := key(o)
		c.mu.Lock()
		same := c.seen[id] == k
		c.seen[id] = k
		c.mu.Unlock()
		if same {
			return nil
		}
		var list nsv1.NodeClaimList
		if err := c.kube.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if match(&list.Items[i], o.GetName()) {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
			}
		}
		return out
	}
}

// Reconcile brings one claim's two conditions in line.
func (c *Conditions) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &nsv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !claim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var pool *nsv1.NodePool
	if name := claim.Labels[nsv1.LabelNodePool]; name != "" {
		pool = &nsv1.NodePool{}
		if err := c.kube.Get(ctx, types.NamespacedName{Name: name}, pool); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("getting nodepool %s of nodeclaim %s: %w", name, claim.Name, err)
			}
			pool = nil
		}
	}
	var nc *awsv1.EC2NodeClass
	if ref := claim.Spec.NodeClassRef; c.classes && ref != nil && ref.Kind == "EC2NodeClass" {
		nc = &awsv1.EC2NodeClass{}
		if err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
			if client.IgnoreNotFound(err) != nil && !apimeta.IsNoMatchError(err) {
				return reconcile.Result{}, fmt.Errorf("getting ec2nodeclass %s of nodeclaim %s: %w", ref.Name, claim.Name, err)
			}
			nc = nil
		}
	}
	now := c.clk.Now()
	want := disruption.ConditionsOf(claim, pool, nc, now)
	// Most reconciles change nothing: the claim is copied only to write.
	conds := slices.Clone(claim.Status.Conditions)
	if want.Apply(&conds, claim.Generation, metav1.NewTime(now)) {
		base := claim.DeepCopy()
		claim.Status.Conditions = conds
		if err := statuspatch.Patch(ctx, c.kube, base, claim); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("writing the disruption conditions of nodeclaim %s: %w", claim.Name, err))
		}
	}
	if !want.Recheck.IsZero() {
		return reconcile.Result{RequeueAfter: want.Recheck.Sub(now)}, nil
	}
	return reconcile.Result{}, nil
}
