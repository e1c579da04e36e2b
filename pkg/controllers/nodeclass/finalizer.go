package nodeclass

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
)

// Finalizer holds an EC2NodeClass until no NodeClaim uses it and its managed
// instance profile is gone: removing the profile's role earlier would cut
// the credentials of nodes still running on it.
const Finalizer = awsv1.Group + "/termination"

// waitForClaims is how often a deleting class checks whether its claims are gone.
const waitForClaims = 10 * time.Second

// finalize runs for a class being deleted: it waits for the claims that
// reference it, then deletes the managed instance profile and lets the class go.
func (c *Controller) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, Finalizer) {
		return reconcile.Result{}, nil
	}
	users, err := c.claimsOf(ctx, nc.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(users) > 0 {
		c.recorder.Publish(events.Normal(nc, "WaitingOnNodeClaims", "Delete",
			fmt.Sprintf("waiting for %d NodeClaim(s) to terminate before deleting the instance profile (e.g. %s)", len(users), users[0])))
		return reconcile.Result{RequeueAfter: waitForClaims}, nil
	}
	if err := c.resolver.DeleteInstanceProfile(ctx, nc); err != nil {
		return reconcile.Result{}, fmt.Errorf("deleting the instance profile of EC2NodeClass %s: %w", nc.Name, err)
	}
	base := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, Finalizer)
	if err := c.kube.Patch(ctx, nc, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing the finalizer of EC2NodeClass %s: %w", nc.Name, err))
	}
	return reconcile.Result{}, nil
}

// claimsOf lists the NodeClaims whose nodeClassRef names the class.
func (c *Controller) claimsOf(ctx context.Context, name string) ([]string, error) {
	var list nsv1.NodeClaimList
	if err := c.kube.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	var names []string
	for i := range list.Items {
		ref := list.Items[i].Spec.NodeClassRef
		if ref != nil && ref.Group == awsv1.Group && ref.Name == name {
			names = append(names, list.Items[i].Name)
		}
	}
	return names, nil
}

// ensureFinalizer adds the finalizer before anything is created for the class.
func (c *Controller) ensureFinalizer(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if controllerutil.ContainsFinalizer(nc, Finalizer) {
		return nil
	}
	base := nc.DeepCopy()
	controllerutil.AddFinalizer(nc, Finalizer)
	if err := c.kube.Patch(ctx, nc, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("adding the finalizer to EC2NodeClass %s: %w", nc.Name, err)
	}
	return nil
}
