package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/providers/aws"
)

// resync is how often a class is resolved again.
const resync = time.Minute

// Resolver resolves a node class's selectors and cleans up what resolving
// created (the AWS provider).
type Resolver interface {
	Resolve(ctx context.Context, nc *awsv1.EC2NodeClass) (*aws.Resolved, error)
	// DeleteInstanceProfile removes the instance profile managed for the
	// class's role; it tolerates a profile that is already gone.
	DeleteInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

// Controller reconciles EC2NodeClass status.
type Controller struct {
	kube     client.Client
	resolver Resolver
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics // nil: no reservation gauges

	mu sync.Mutex
	// exported are the reservation series last set, by class, so a
	// reservation that is gone is deleted, not left stale.
	exported map[string][][5]string
}

// New builds the controller; m may be nil.
func New(kube client.Client, r Resolver, clk clock.Clock, rec *events.Recorder, m *metrics.Metrics) *Controller {
	return &Controller{kube: kube, resolver: r, clk: clk, recorder: rec, metrics: m, exported: map[string][][5]string{}}
}

// exportReservations sets the class's reservation gauges from its status.
func (c *Controller) exportReservations(nc *awsv1.EC2NodeClass) {
	if c.metrics == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var now [][5]string
	for _, r := range nc.Status.CapacityReservations {
		k := [5]string{nc.Name, r.ID, r.ReservationType, r.InstanceType, r.AvailabilityZone}
		c.metrics.CapacityReservationAvailable.WithLabelValues(k[:]...).Set(float64(r.AvailableInstanceCount))
		now = append(now, k)
	}
	for _, old := range c.exported[nc.Name] {
		if !slices.Contains(now, old) {
			c.metrics.CapacityReservationAvailable.DeleteLabelValues(old[:]...)
		}
	}
	c.exported[nc.Name] = now
}

// Controller declares the controller: EC2NodeClasses.
func (c *Controller) Controller() operator.Controller {
	return operator.Controller{Name: "ec2nodeclass.status", For: &awsv1.EC2NodeClass{}, Reconciler: c}
}

var parts = []string{awsv1.ConditionSubnetsReady, awsv1.ConditionSecurityGroupsReady, awsv1.ConditionAMIsReady, awsv1.ConditionInstanceProfileReady, awsv1.ConditionCapacityReservationsReady}

// Reconcile resolves the class and writes its status.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		// Resolving now would recreate the profile the finalizer is removing.
		return c.finalize(ctx, nc)
	}
	if err := c.ensureFinalizer(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	base := nc.DeepCopy()
	now := metav1.NewTime(c.clk.Now())
	resolved, err := c.resolver.Resolve(ctx, nc)
	Apply(&nc.Status, resolved, err, nc.Generation, now)
	var re *aws.ResolveError
	if err != nil && !errors.As(err, &re) {
		// Not a user error (throttling, network): retry with backoff, keep status.
		return reconcile.Result{}, fmt.Errorf("resolving EC2NodeClass %s: %w", nc.Name, err)
	}
	if re != nil {
		c.recorder.Publish(events.Warning(nc, re.Reason, "Resolve", re.Message))
	}
	if !equality.Semantic.DeepEqual(base.Status, nc.Status) {
		if perr := statuspatch.Patch(ctx, c.kube, base, nc); perr != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching EC2NodeClass %s status: %w", nc.Name, perr))
		}
	}
	c.exportReservations(nc)
	return reconcile.Result{RequeueAfter: resync}, nil
}

// Apply writes a resolution result into st: the resolved values on
// success, the failing part's condition from a ResolveError, and Ready over
// all parts. Resolution stops at the first failure, so the parts after it
// were not checked: they become Unknown rather than keep a True that may no
// longer hold.
func Apply(st *awsv1.EC2NodeClassStatus, r *aws.Resolved, err error, gen int64, now metav1.Time) {
	var re *aws.ResolveError
	switch {
	case err == nil && r != nil:
		r.ApplyTo(st)
		for _, p := range parts {
			lifecycle.SetCondition(&st.Conditions, lifecycle.Condition(p, true, "", ""), gen, now)
		}
	case errors.As(err, &re):
		lifecycle.SetCondition(&st.Conditions, lifecycle.Condition(re.Condition, false, re.Reason, re.Message), gen, now)
		after := false
		for _, p := range parts {
			if after {
				lifecycle.SetCondition(&st.Conditions, metav1.Condition{Type: p, Status: metav1.ConditionUnknown, Reason: "NotChecked",
					Message: "not checked: resolution stopped at " + re.Condition}, gen, now)
			}
			after = after || p == re.Condition
		}
	default:
		return
	}
	lifecycle.SetCondition(&st.Conditions, lifecycle.AllReady(st.Conditions, parts...), gen, now)
}
