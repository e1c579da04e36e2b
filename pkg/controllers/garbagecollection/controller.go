package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// Options tune garbage collection.
type Options struct {
	// Interval between passes (default 30 s).
	Interval time.Duration
	// Grace is how old an unaccounted instance, or a claim whose instance is
	// missing, must be before it is collected (default 30 s): a claim's
	// status is written a moment after its instance launches.
	Grace time.Duration
}

// Controller is a periodic loop (an operator.Singleton, leader only).
type Controller struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
	opts     Options
}

// New builds the controller.
func New(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, rec *events.Recorder, m *metrics.Metrics, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	if opts.Grace <= 0 {
		opts.Grace = 30 * time.Second
	}
	return &Controller{kube: kube, cloud: cloud, clk: clk, recorder: rec, metrics: m, opts: opts}
}

var _ operator.Singleton = (*Controller)(nil)

// Name identifies the singleton.
func (c *Controller) Name() string { return "garbagecollection" }

// Reconcile runs one pass and asks for the next one an interval later; a
// failed pass is retried with backoff.
func (c *Controller) Reconcile(ctx context.Context) (reconcile.Result, error) {
	if err := c.Collect(ctx); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// Collect runs one pass. It terminates nothing unless the cloud listed every
// instance (List fails as a whole on any failed page), and it deletes a claim
// only when the cloud answered that its instance is gone.
func (c *Controller) Collect(ctx context.Context) error {
	instances, err := c.cloud.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	var claims nsv1.NodeClaimList
	if err := c.kube.List(ctx, &claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	byID := map[string]*nsv1.NodeClaim{}
	byName := map[string]*nsv1.NodeClaim{}
	var launching []*nsv1.NodeClaim // no instance recorded yet, not deleting
	for i := range claims.Items {
		cl := &claims.Items[i]
		byName[cl.Name] = cl
		if cl.Status.ProviderID != "" {
			byID[cl.Status.ProviderID] = cl
		} else if cl.DeletionTimestamp.IsZero() {
			launching = append(launching, cl)
		}
	}
	now := c.clk.Now()
	var errs []error
	live := map[string]bool{}
	for _, in := range instances {
		live[in.Status.ProviderID] = true
		if cl := byID[in.Status.ProviderID]; cl != nil {
			if lifecycle.ReservationEnded(cl, in) {
				if err := c.endReservation(ctx, cl, in); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		// A claim of that name with no providerID yet is mid-launch (or its
		// controller died before writing status): its next launch attempt
		// returns this very instance, so it is not an orphan.
		if cl := byName[in.Name]; cl != nil && cl.Status.ProviderID == "" && cl.DeletionTimestamp.IsZero() {
			continue
		}
		// An instance of a shared launch whose answer was lost belongs to no
		// claim yet; a claim it was launched for takes it on its next launch
		// attempt, however long the launching controller took to come back.
		if waitsFor(in, launching) {
			continue
		}
		if now.Sub(in.CreationTimestamp.Time) < c.opts.Grace {
			continue
		}
		if err := c.cloud.Delete(ctx, in); cloudprovider.IgnoreNodeClaimNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("terminating orphan instance %s: %w", in.Status.ProviderID, err))
			continue
		}
		c.metrics.NodeClaimsTerminated.WithLabelValues(in.Labels[nsv1.LabelNodePool], "orphan").Inc()
		log.FromContext(ctx).Info("terminated orphan instance", "providerID", in.Status.ProviderID, "nodeclaim", in.Name)
	}
	for _, cl := range byID {
		if live[cl.Status.ProviderID] || !cl.DeletionTimestamp.IsZero() || !lifecycle.IsTrue(cl.Status.Conditions, nsv1.ConditionLaunched) {
			continue
		}
		if now.Sub(cl.CreationTimestamp.Time) < c.opts.Grace {
			continue
		}
		// List may lag a fresh launch; ask for this one instance before acting.
		if _, err := c.cloud.Get(ctx, cl.Status.ProviderID); !cloudprovider.IsNodeClaimNotFound(err) {
			if err != nil {
				errs = append(errs, fmt.Errorf("checking instance of nodeclaim %s: %w", cl.Name, err))
			}
			continue
		}
		c.recorder.Publish(events.Warning(cl, events.ReasonInstanceGone, "Delete",
			fmt.Sprintf("instance %s no longer exists; deleting the claim so its pods are planned again", cl.Status.ProviderID)))
		if err := c.kube.Delete(ctx, cl); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s whose instance vanished: %w", cl.Name, err))
			continue
		}
		c.metrics.NoteTermination(cl.UID, "instance_gone")
	}
	return errors.Join(errs...)
}

// endReservation relabels a claim whose ODCR ended (lifecycle.
// ReservationEnded) and its Node as on-demand, and gives the claim the
// instance's on-demand price, which it is billed from now on. A conflict is
// left to the next pass.
func (c *Controller) endReservation(ctx context.Context, cl, instance *nsv1.NodeClaim) error {
	reservation := cl.Labels[awsv1.LabelCapacityReservationID]
	base := cl.DeepCopy()
	if lifecycle.OnDemandLabels(cl.Labels) {
		if err := c.kube.Patch(ctx, cl, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("relabelling nodeclaim %s as on-demand: %w", cl.Name, err))
		}
	}
	base = cl.DeepCopy()
	cl.Status.CapacityType = nsv1.CapacityTypeOnDemand
	if instance.Status.Price != "" {
		cl.Status.Price = instance.Status.Price
	}
	if err := statuspatch.Patch(ctx, c.kube, base, cl); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("writing nodeclaim %s's on-demand status: %w", cl.Name, err))
	}
	if cl.Status.NodeName != "" {
		node := &corev1.Node{}
		if err := c.kube.Get(ctx, types.NamespacedName{Name: cl.Status.NodeName}, node); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("getting node %s: %w", cl.Status.NodeName, err))
		}
		nbase := node.DeepCopy()
		if lifecycle.OnDemandLabels(node.Labels) {
			if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(nbase, client.MergeFromWithOptimisticLock{})); err != nil {
				return client.IgnoreNotFound(fmt.Errorf("relabelling node %s as on-demand: %w", node.Name, err))
			}
		}
	}
	c.recorder.Publish(events.Normal(cl, events.ReasonReservationEnded, "Relabel",
		fmt.Sprintf("capacity reservation %s ended; instance %s runs on as on-demand, relabelled and priced so", reservation, cl.Status.ProviderID)))
	log.FromContext(ctx).Info("capacity reservation ended; node relabelled on-demand", "nodeclaim", cl.Name, "reservation", reservation)
	return nil
}

// waitsFor reports whether instance was started by a shared launch for one
// of the claims still waiting for an instance.
func waitsFor(instance *nsv1.NodeClaim, launching []*nsv1.NodeClaim) bool {
	if instance.Name != "" {
		return false
	}
	for _, cl := range launching {
		if cloudprovider.LaunchedFor(instance, cl) {
			return true
		}
	}
	return false
}
