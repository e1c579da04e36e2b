package nodeclaim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// Options tune the controller.
type Options struct {
	Timeouts lifecycle.Timeouts
	// Replan is called with the pods released when a claim fails to launch,
	// so the provisioner plans them again without waiting for a new trigger.
	Replan func(pods []types.UID)
	// MaxConcurrentReconciles bounds parallel reconciles (launches are slow).
	MaxConcurrentReconciles int
}

// Controller reconciles NodeClaims through launch, registration and
// initialization.
type Controller struct {
	kube     client.Client
	cluster  *state.Cluster
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
	opts     Options
	launcher *Launcher
}

// New builds the controller.
func New(kube client.Client, cloud cloudprovider.CloudProvider, cluster *state.Cluster, clk clock.Clock,
	rec *events.Recorder, m *metrics.Metrics, opts Options) *Controller {
	if opts.Timeouts == (lifecycle.Timeouts{}) {
		opts.Timeouts = lifecycle.DefaultTimeouts()
	}
	return &Controller{kube: kube, cluster: cluster, clk: clk, recorder: rec, metrics: m, opts: opts,
		launcher: NewLauncher(kube, cloud, cluster, clk, rec, m, opts.Replan)}
}

// Launcher is the launch phase, shared with the provisioner, which launches
// the claims it creates in the same cycle.
func (c *Controller) Launcher() *Launcher { return c.launcher }

// Controller declares the controller: NodeClaims, and Nodes mapped to their
// claim by providerID.
func (c *Controller) Controller() operator.Controller {
	workers := c.opts.MaxConcurrentReconciles
	if workers <= 0 {
		workers = 10
	}
	return operator.Controller{
		Name:       "nodeclaim.lifecycle",
		For:        &nsv1.NodeClaim{},
		Watches:    []operator.Watch{{Object: &corev1.Node{}, Map: c.claimForNode}},
		Workers:    workers,
		Reconciler: c,
	}
}

func (c *Controller) claimForNode(ctx context.Context, o client.Object) []reconcile.Request {
	claim, err := state.ClaimForNode(ctx, c.kube, o.(*corev1.Node))
	if err != nil || claim == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: claim.Name}}}
}

// phase is one step of the lifecycle; it mutates the claim in memory and
// says when to look again.
type phase func(ctx context.Context, claim *nsv1.NodeClaim) (reconcile.Result, error)

// Reconcile is the skeleton: get → finalizer first → deferred patch → phases
// → lowest result.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	claim := &nsv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		if apierrors.IsNotFound(err) {
			c.release(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !claim.DeletionTimestamp.IsZero() || provisioning.Disrupted(claim) {
		// Going away: pods nominated onto it are planned again now, not when
		// their nominations run out.
		c.release(claim.Name, claim.Status.NodeName)
	}
	if !claim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // the termination controller owns deleting claims
	}
	if !controllerutil.ContainsFinalizer(claim, nsv1.TerminationFinalizer) {
		// Finalizer first: an instance must never exist for a claim that can
		// vanish without the termination controller seeing it.
		base := claim.DeepCopy()
		controllerutil.AddFinalizer(claim, nsv1.TerminationFinalizer)
		if err := c.kube.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("adding finalizer to nodeclaim %s: %w", claim.Name, err))
		}
	}
	base := claim.DeepCopy()
	defer func() {
		if perr := c.persist(ctx, base, claim); perr != nil {
			if launched(claim) && !launched(base) {
				c.cluster.LaunchNotRecorded(claim.Name)
			}
			err = errors.Join(err, perr)
		}
	}()

	var results []reconcile.Result
	for _, p := range []phase{c.launch, c.register, c.initialize, c.liveness} {
		r, err := p(ctx, claim)
		if err != nil {
			// A phase that keeps failing must still time out.
			if _, lerr := c.liveness(ctx, claim); lerr == nil && !claim.DeletionTimestamp.IsZero() {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, err
		}
		if !claim.DeletionTimestamp.IsZero() {
			return reconcile.Result{}, nil // liveness or launch deleted it
		}
		results = append(results, r)
	}
	return lowest(results), nil
}

func launched(claim *nsv1.NodeClaim) bool {
	return lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionLaunched)
}

// persist writes metadata then status changes made by the phases.
func (c *Controller) persist(ctx context.Context, base, claim *nsv1.NodeClaim) error {
	if !claim.DeletionTimestamp.IsZero() {
		return nil
	}
	ready := lifecycle.ClaimReady(claim.Status.Conditions)
	lifecycle.SetCondition(&claim.Status.Conditions, ready, claim.Generation, metav1.NewTime(c.clk.Now()))
	return Persist(ctx, c.kube, base, claim)
}

// Persist writes claim's label, annotation and status changes since base.
// The status goes through statuspatch, so a condition another controller
// set since base was read (the interruption handler's Disrupting) is kept.
// Labels and annotations go first, as a merge patch of the keys that
// changed; its response is the copy the status patch is locked on, and
// claim ends holding the object as written.
func Persist(ctx context.Context, kube client.Client, base, claim *nsv1.NodeClaim) error {
	var onto []statuspatch.Option
	if mp := metadataPatch(base, claim); mp != nil {
		written := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Namespace: claim.Namespace}}
		if err := kube.Patch(ctx, written, client.RawPatch(types.MergePatchType, mp)); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim %s metadata: %w", claim.Name, err))
		}
		onto = append(onto, statuspatch.Onto(written))
		status := claim.Status
		*claim = *written.DeepCopy()
		claim.Status = status
	}
	if !equality.Semantic.DeepEqual(base.Status, claim.Status) {
		if err := statuspatch.Patch(ctx, kube, base, claim, onto...); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("patching nodeclaim %s status: %w", claim.Name, err)
		}
	}
	return nil
}

// metadataPatch is the JSON merge patch of claim's labels and annotations
// over base's: the keys added or changed, and those removed as null. Nil
// when both are unchanged. Only these maps are encoded, not two whole
// objects as client.MergeFrom would.
func metadataPatch(base, claim *nsv1.NodeClaim) []byte {
	type meta struct {
		Labels      map[string]*string `json:"labels,omitempty"`
		Annotations map[string]*string `json:"annotations,omitempty"`
	}
	m := meta{Labels: mapPatch(base.Labels, claim.Labels), Annotations: mapPatch(base.Annotations, claim.Annotations)}
	if m.Labels == nil && m.Annotations == nil {
		return nil
	}
	b, err := json.Marshal(struct {
		Metadata meta `json:"metadata"`
	}{m})
	if err != nil {
		panic(err) // maps of strings always encode
	}
	return b
}

// mapPatch is a merge patch from one string map to another (nil: equal).
func mapPatch(from, to map[string]string) map[string]*string {
	var out map[string]*string
	put := func(k string, v *string) {
		if out == nil {
			out = map[string]*string{}
		}
		out[k] = v
	}
	for k, v := range to {
		if old, ok := from[k]; !ok || old != v {
			put(k, &v)
		}
	}
	for k := range from {
		if _, ok := to[k]; !ok {
			put(k, nil)
		}
	}
	return out
}

// lowest is the soonest requeue among the phases' results (zero means none).
func lowest(rs []reconcile.Result) reconcile.Result {
	var out time.Duration
	for _, r := range rs {
		if r.RequeueAfter > 0 && (out == 0 || r.RequeueAfter < out) {
			out = r.RequeueAfter
		}
	}
	return reconcile.Result{RequeueAfter: out}
}

func (c *Controller) setCondition(claim *nsv1.NodeClaim, cond metav1.Condition) {
	lifecycle.SetCondition(&claim.Status.Conditions, cond, claim.Generation, metav1.NewTime(c.clk.Now()))
}

func poolOf(claim *nsv1.NodeClaim) string { return claim.Labels[nsv1.LabelNodePool] }

// release drops the nominations onto targets (a claim and its node) and
// has the provisioner plan the pods they held at once.
func (c *Controller) release(targets ...string) {
	var released []types.UID
	for _, t := range targets {
		if t != "" {
			released = append(released, c.cluster.ReleaseTarget(t)...)
		}
	}
	if len(released) > 0 && c.opts.Replan != nil {
		c.opts.Replan(released)
	}
}
