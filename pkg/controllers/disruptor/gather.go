package disruptor

import (
	"context"
	"fmt"
	"time"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// gather is the planner's input: the snapshot, every usable pool's
// instance types from the cloud provider (its insufficient-capacity cache
// already applied to their offerings), the EC2NodeClasses, the
// provisioner's nominations and the claims acted on lately.
func (c *Controller) gather(ctx context.Context, snap *state.Snapshot, now time.Time) (disruption.Input, error) {
	types := map[string][]*catalog.InstanceType{}
	for _, np := range provisioning.UsablePools(snap) {
		its, err := c.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			// The pool's nodes are still priced from their claims; it just
			// launches no replacement this time.
			c.recorder.Publish(events.Warning(np, "InstanceTypesUnavailable", "Disrupt", err.Error()))
			continue
		}
		types[np.Name] = its
	}
	var list awsv1.EC2NodeClassList
	if err := c.cluster.Reader().List(ctx, &list); err != nil {
		return disruption.Input{}, fmt.Errorf("listing ec2nodeclasses for drift: %w", err)
	}
	classes := make(map[string]*awsv1.EC2NodeClass, len(list.Items))
	for i := range list.Items {
		classes[list.Items[i].Name] = &list.Items[i]
	}
	return disruption.Input{
		Snapshot: snap, InstanceTypes: types, NodeClasses: classes,
		Nominated: c.cluster.Nominated, Disrupting: c.recentlyActed(now), Now: now, Options: c.opts.Plan,
		BufferPods: c.cluster.BufferPods(), Booked: c.cluster.Booked,
	}, nil
}
