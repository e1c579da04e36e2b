package metrics

import (
	"context"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

// Instrument wraps cp so every call is counted and timed, and failures are
// counted by error class (insufficient_capacity, not_found,
// nodeclass_not_ready, cloud_unavailable, launch_rejected, other).
func Instrument(cp cloudprovider.CloudProvider, m *Metrics) cloudprovider.CloudProvider {
	return &instrumented{cp: cp, m: m}
}

type instrumented struct {
	cp cloudprovider.CloudProvider
	m  *Metrics
}

var _ cloudprovider.CloudProvider = (*instrumented)(nil)

func (i *instrumented) observe(method string, start time.Time, err error) {
	i.m.CloudCalls.WithLabelValues(method).Inc()
	i.m.CloudDuration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	if err != nil {
		i.m.CloudErrors.WithLabelValues(method, ErrorClass(err)).Inc()
	}
}

// ErrorClass names the class of a cloud provider error for metric labels.
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case cloudprovider.IsInsufficientCapacity(err):
		return "insufficient_capacity"
	case cloudprovider.IsNodeClaimNotFound(err):
		return "not_found"
	case cloudprovider.IsNodeClassNotReady(err):
		return "nodeclass_not_ready"
	case cloudprovider.IsCloudUnavailable(err):
		return "cloud_unavailable"
	case cloudprovider.IsLaunchRejected(err):
		return "launch_rejected"
	}
	return "other"
}

func (i *instrumented) Create(ctx context.Context, c *nsv1.NodeClaim) (*nsv1.NodeClaim, error) {
	start := time.Now()
	out, err := i.cp.Create(ctx, c)
	i.observe("Create", start, err)
	return out, err
}

// CreateAll counts as one call; its failures are counted per claim.
func (i *instrumented) CreateAll(ctx context.Context, cs []*nsv1.NodeClaim) []cloudprovider.CreateResult {
	start := time.Now()
	out := i.cp.CreateAll(ctx, cs)
	i.observe("CreateAll", start, nil)
	for _, r := range out {
		if r.Err != nil {
			i.m.CloudErrors.WithLabelValues("CreateAll", ErrorClass(r.Err)).Inc()
		}
	}
	return out
}

func (i *instrumented) Delete(ctx context.Context, c *nsv1.NodeClaim) error {
	start := time.Now()
	err := i.cp.Delete(ctx, c)
	i.observe("Delete", start, err)
	return err
}

func (i *instrumented) Get(ctx context.Context, id string) (*nsv1.NodeClaim, error) {
	start := time.Now()
	out, err := i.cp.Get(ctx, id)
	i.observe("Get", start, err)
	return out, err
}

func (i *instrumented) List(ctx context.Context) ([]*nsv1.NodeClaim, error) {
	start := time.Now()
	out, err := i.cp.List(ctx)
	i.observe("List", start, err)
	return out, err
}

func (i *instrumented) GetInstanceTypes(ctx context.Context, p *nsv1.NodePool) ([]*catalog.InstanceType, error) {
	start := time.Now()
	out, err := i.cp.GetInstanceTypes(ctx, p)
	i.observe("GetInstanceTypes", start, err)
	return out, err
}

func (i *instrumented) Name() string { return i.cp.Name() }

// AdjustInstanceTypes hands fn to the instrumented provider when it takes
// one (cloudprovider/overlay.Adjustable: the NodeOverlays applied to its
// launches), so instrumenting a provider does not lose that.
func (i *instrumented) AdjustInstanceTypes(fn func(context.Context, []*catalog.InstanceType) ([]*catalog.InstanceType, error)) {
	if a, ok := i.cp.(interface {
		AdjustInstanceTypes(func(context.Context, []*catalog.InstanceType) ([]*catalog.InstanceType, error))
	}); ok {
		a.AdjustInstanceTypes(fn)
	}
}
