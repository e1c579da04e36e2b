package interruption

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// capacityBlockRecheck is how often a block's node whose end is not known
// (its class has not read the reservation yet) is looked at again.
const capacityBlockRecheck = time.Minute

// CapacityBlocks marks the NodeClaims of Capacity Blocks before EC2
// reclaims them (interruption.CapacityBlockMark): 40 minutes before the
// block ends, with the reclaim, 30 minutes before, as the deadline. The
// mark is an interruption's, so the disruption executor launches the
// replacements and drains the node as for a spot notice. It needs no
// interruption queue: the end date comes from the EC2NodeClass's
// status.capacityReservations.
type CapacityBlocks struct {
	Deps
}

// NewCapacityBlocks builds the reconciler.
func NewCapacityBlocks(deps Deps) *CapacityBlocks { return &CapacityBlocks{Deps: deps} }

// Controller declares it: the claims launched into a Capacity Block.
func (c *CapacityBlocks) Controller() operator.Controller {
	return operator.Controller{
		Name: "interruption.capacityblock",
		For:  &nsv1.NodeClaim{},
		ForPredicate: func(o client.Object) bool {
			_, ok := interruption.InCapacityBlock(o.(*nsv1.NodeClaim))
			return ok
		},
		Reconciler: c,
	}
}

// Reconcile marks one block's claim when its time has come, or comes back then.
func (c *CapacityBlocks) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &nsv1.NodeClaim{}
	if err := c.Kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	id, ok := interruption.InCapacityBlock(claim)
	if !ok || !claim.DeletionTimestamp.IsZero() || interruption.MarkOf(claim).Interrupted() {
		return reconcile.Result{}, nil
	}
	end, known, err := c.blockEnd(ctx, claim, id)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !known {
		return reconcile.Result{RequeueAfter: capacityBlockRecheck}, nil
	}
	now := c.Clock.Now()
	next, due, at := interruption.CapacityBlockMark(end, now)
	if !due {
		return reconcile.Result{RequeueAfter: at.Sub(now)}, nil
	}
	cur := interruption.MarkOf(claim)
	merged, _ := interruption.Merge(cur, next)
	msg := interruption.CapacityBlockMessage(id, end)
	if err := c.annotate(ctx, claim, merged.Deadline, now); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.setCondition(ctx, claim, merged, msg); err != nil {
		return reconcile.Result{}, err
	}
	node, err := nodeOf(ctx, c.Kube, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := c.taint(ctx, node, now); err != nil {
		return reconcile.Result{}, err
	}
	publish(c.Recorder, claim, node, notice(events.ReasonCapacityBlockExpiring, msg+"; its replacement capacity is planned and launched by the disruption executor"))
	c.wake("capacityblock/" + claim.Name)
	return reconcile.Result{}, nil
}

// blockEnd is the end of Capacity Block id as the claim's EC2NodeClass
// status names it; false when the class does not (yet) list it.
func (c *CapacityBlocks) blockEnd(ctx context.Context, claim *nsv1.NodeClaim, id string) (time.Time, bool, error) {
	if claim.Spec.NodeClassRef == nil {
		return time.Time{}, false, nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.Kube.Get(ctx, client.ObjectKey{Name: claim.Spec.NodeClassRef.Name}, nc); err != nil {
		return time.Time{}, false, client.IgnoreNotFound(err)
	}
	for _, r := range nc.Status.CapacityReservations {
		if r.ID == id && r.EndTime != nil {
			return r.EndTime.Time, true, nil
		}
	}
	return time.Time{}, false, nil
}
