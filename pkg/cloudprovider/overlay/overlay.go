// Package overlay wraps a CloudProvider so that the instance types it
// returns carry the cluster's NodeOverlays (catalog.ApplyOverlays): every
// controller that reads instance types through the wrapped provider — the
// provisioner, the disruption planner and executor, the node pool, static
// pool and limit controllers — and the simulator, which runs the same
// controllers, see the adjusted prices and capacity. Only the instance
// types change; launches and deletes pass through.
package overlay

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

// Provider is a CloudProvider whose instance types carry the NodeOverlays.
type Provider struct {
	cloudprovider.CloudProvider
	kube client.Reader
}

var _ cloudprovider.CloudProvider = &Provider{}

// Adjustable is a provider that launches from its own instance types and
// can be told to apply the overlays to them too (the AWS provider), so a
// launch orders its options and prices its claim as the solver did.
type Adjustable interface {
	AdjustInstanceTypes(func(context.Context, []*catalog.InstanceType) ([]*catalog.InstanceType, error))
}

// Wrap returns cloud with NodeOverlays, read from kube, applied; an
// Adjustable cloud applies them to its launches too.
func Wrap(cloud cloudprovider.CloudProvider, kube client.Reader) *Provider {
	p := &Provider{CloudProvider: cloud, kube: kube}
	if a, ok := cloud.(Adjustable); ok {
		a.AdjustInstanceTypes(p.apply)
	}
	return p
}

// GetInstanceTypes is the wrapped provider's types with the overlays that
// parse applied; an overlay that does not parse is left out (its status
// says why: pkg/controllers/nodeoverlay).
func (p *Provider) GetInstanceTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error) {
	its, err := p.CloudProvider.GetInstanceTypes(ctx, pool)
	if err != nil {
		return nil, err
	}
	return p.apply(ctx, its)
}

// apply is its with the cluster's overlays applied (catalog.ApplyOverlays).
func (p *Provider) apply(ctx context.Context, its []*catalog.InstanceType) ([]*catalog.InstanceType, error) {
	var list v1alpha1.NodeOverlayList
	if err := p.kube.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing node overlays: %w", err)
	}
	overlays, _ := catalog.OverlaysFrom(list.Items)
	its, _ = catalog.ApplyOverlays(its, overlays)
	return its, nil
}
