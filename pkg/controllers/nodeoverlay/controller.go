package nodeoverlay

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// InstanceTypes are a pool's instance types before overlays (the cloud
// provider, unwrapped).
type InstanceTypes interface {
	GetInstanceTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error)
}

// recheck is how often conflicts are recomputed: they depend on the
// catalog, which moves without any object changing.
const recheck = 5 * time.Minute

// Controller reconciles NodeOverlay status.
type Controller struct {
	kube  client.Client
	types InstanceTypes
	clk   clock.Clock
}

// New builds the controller.
func New(kube client.Client, its InstanceTypes, clk clock.Clock) *Controller {
	return &Controller{kube: kube, types: its, clk: clk}
}

// Controller declares the controller: NodeOverlays, re-checked when any
// overlay or NodePool changes (a conflict involves two overlays, and the
// types they select come from the pools).
func (c *Controller) Controller() operator.Controller {
	return operator.Controller{
		Name: "nodeoverlay.status",
		For:  &v1alpha1.NodeOverlay{},
		Watches: []operator.Watch{
			{Object: &v1alpha1.NodeOverlay{}, Map: c.all},
			{Object: &nsv1.NodePool{}, Map: c.all},
		},
		Reconciler: c,
	}
}

func (c *Controller) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.NodeOverlayList
	if err := c.kube.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, o := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: o.Name}})
	}
	return out
}

// Reconcile recomputes one overlay's conditions.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ov := &v1alpha1.NodeOverlay{}
	if err := c.kube.Get(ctx, req.NamespacedName, ov); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := ov.DeepCopy()
	_, parseErr := catalog.OverlayFrom(ov)
	var conflicts []string
	if parseErr == nil {
		var err error
		if conflicts, err = c.conflicts(ctx, ov.Name); err != nil {
			return reconcile.Result{}, err
		}
	}
	now := metav1.NewTime(c.clk.Now())
	for _, cond := range conditions(parseErr, conflicts) {
		lifecycle.SetCondition(&ov.Status.Conditions, cond, ov.Generation, now)
	}
	if err := statuspatch.Patch(ctx, c.kube, base, ov); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// conflicts are the overlays name conflicts with over the instance types of
// every NodePool (catalog.ApplyOverlays on each pool's types).
func (c *Controller) conflicts(ctx context.Context, name string) ([]string, error) {
	var list v1alpha1.NodeOverlayList
	if err := c.kube.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing node overlays: %w", err)
	}
	overlays, _ := catalog.OverlaysFrom(list.Items)
	var pools nsv1.NodePoolList
	if err := c.kube.List(ctx, &pools); err != nil {
		return nil, fmt.Errorf("listing node pools: %w", err)
	}
	var out []string
	for i := range pools.Items {
		its, err := c.types.GetInstanceTypes(ctx, &pools.Items[i])
		if err != nil {
			continue // a pool whose class is not ready offers no types
		}
		_, res := catalog.ApplyOverlays(its, overlays)
		for _, other := range res.Conflicts[name] {
			if !slices.Contains(out, other) {
				out = append(out, other)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
