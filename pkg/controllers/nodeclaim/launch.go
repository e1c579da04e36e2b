package nodeclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

// Outcome of one launch attempt.
type Outcome int

const (
	// Launched: the instance exists and the claim's status describes it.
	Launched Outcome = iota
	// Busy: someone else is launching this claim right now.
	Busy
	// Failed: Create failed; the claim stays and the error says why.
	Failed
	// Deleted: no offering had capacity; the claim was deleted and its pods released.
	Deleted
)

// Launcher runs CloudProvider.Create for a claim and records the result.
type Launcher struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	cluster  *state.Cluster
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
	replan   func([]types.UID)
	limits   *launchLimits
}

// NewLauncher builds a Launcher; replan may be nil.
func NewLauncher(kube client.Client, cloud cloudprovider.CloudProvider, cluster *state.Cluster, clk clock.Clock,
	rec *events.Recorder, m *metrics.Metrics, replan func([]types.UID)) *Launcher {
	return &Launcher{kube: kube, cloud: cloud, cluster: cluster, clk: clk, recorder: rec, metrics: m, replan: replan, limits: newLaunchLimits(clk)}
}

// Launch creates the instance for claim and fills claim's status and labels
// in memory; the caller persists them. On insufficient capacity it deletes
// the claim (the provider has marked the offerings unavailable, so the next
// plan avoids them) and hands its nominated pods to replan.
func (l *Launcher) Launch(ctx context.Context, claim *nsv1.NodeClaim) (Outcome, error) {
	if lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionLaunched) {
		return Launched, nil
	}
	if !l.cluster.StartLaunch(claim.Name) {
		return Busy, nil
	}
	defer l.cluster.EndLaunch(claim.Name)
	return l.LaunchHeld(ctx, claim)
}

// LaunchHeld is Launch for a caller that already holds the claim's launch
// mark (state.Cluster.StartLaunch).
func (l *Launcher) LaunchHeld(ctx context.Context, claim *nsv1.NodeClaim) (Outcome, error) {
	if lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionLaunched) {
		return Launched, nil
	}
	target, done, why, err := l.withinLimits(ctx, claim)
	defer done()
	if err != nil {
		return Failed, fmt.Errorf("launching nodeclaim %s: %w", claim.Name, err)
	}
	if why != "" {
		return l.refuse(ctx, claim, why)
	}
	return l.createAndRecord(ctx, claim, target)
}

// LaunchTrimmed launches claim (its launch mark held) within its pool np's
// turn (PoolTurn, held by the caller), trimmed to np's limits (Trim), or
// refuses it.
func (l *Launcher) LaunchTrimmed(ctx context.Context, np *nsv1.NodePool, claim *nsv1.NodeClaim) (Outcome, error) {
	target, why, err := l.Trim(ctx, np, claim)
	if err != nil {
		return Failed, fmt.Errorf("launching nodeclaim %s: %w", claim.Name, err)
	}
	if why != "" {
		return l.refuse(ctx, claim, why)
	}
	return l.createAndRecord(ctx, claim, target)
}

// createAndRecord creates target (claim, or claim trimmed to its pool's
// limits) and records the outcome on claim.
func (l *Launcher) createAndRecord(ctx context.Context, claim, target *nsv1.NodeClaim) (Outcome, error) {
	created, err := l.cloud.Create(ctx, target)
	out, err := l.Record(ctx, claim, created, err)
	if out == Launched {
		l.Recorded(claim)
	}
	return out, err
}

// refuse deletes a claim whose launch the pool's limits refuse (no option
// fits what its launched capacity leaves, or those that fit miss a
// minValues) and hands its pods to replan, as after insufficient capacity.
func (l *Launcher) refuse(ctx context.Context, claim *nsv1.NodeClaim, why string) (Outcome, error) {
	l.recorder.Publish(events.Warning(claim, events.ReasonLimitReached, "Launch",
		fmt.Sprintf("not launched, planning the pods again: %s", why)))
	if derr := l.kube.Delete(ctx, claim); client.IgnoreNotFound(derr) != nil {
		return Failed, fmt.Errorf("deleting nodeclaim %s over its pool's limits: %w", claim.Name, derr)
	}
	l.metrics.NoteTermination(claim.UID, "limit_reached")
	now := metav1.NewTime(l.clk.Now())
	claim.DeletionTimestamp = &now
	if released := l.cluster.ReleaseTarget(claim.Name); len(released) > 0 && l.replan != nil {
		l.replan(released)
	}
	return Deleted, nil
}

// Record applies the outcome of the cloud's Create (or of the claim's share
// of CreateAll, as the provisioner launches a cycle's claims together) to
// claim in memory; the caller persists it. On insufficient capacity it
// deletes the claim (the provider has marked the offerings unavailable, so
// the next plan avoids them) and hands its nominated pods to replan.
func (l *Launcher) Record(ctx context.Context, claim, created *nsv1.NodeClaim, err error) (Outcome, error) {
	now := metav1.NewTime(l.clk.Now())
	switch {
	case cloudprovider.IsInsufficientCapacity(err):
		l.recorder.Publish(events.Warning(claim, events.ReasonInsufficientCapacity, "Launch",
			fmt.Sprintf("no requested offering had capacity; planning the pods again: %v", err)))
		if derr := l.kube.Delete(ctx, claim); client.IgnoreNotFound(derr) != nil {
			return Failed, fmt.Errorf("deleting nodeclaim %s after insufficient capacity: %w", claim.Name, derr)
		}
		l.metrics.NoteTermination(claim.UID, "insufficient_capacity")
		claim.DeletionTimestamp = &now
		if released := l.cluster.ReleaseTarget(claim.Name); len(released) > 0 && l.replan != nil {
			l.replan(released)
		}
		return Deleted, nil
	case cloudprovider.IsNodeClassNotReady(err):
		lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, false, "NodeClassNotReady", err.Error()), claim.Generation, now)
		l.recorder.Publish(events.Warning(claim, events.ReasonLaunchFailed, "Launch", err.Error()))
		return Failed, fmt.Errorf("launching nodeclaim %s: %w", claim.Name, err)
	case cloudprovider.IsCloudUnavailable(err):
		// The outcome is unknown: the same launch attempt (and so the same
		// idempotency token) is retried, and liveness keeps the claim.
		lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, false, lifecycle.ReasonCloudUnavailable, err.Error()), claim.Generation, now)
		l.recorder.Publish(events.Warning(claim, events.ReasonLaunchFailed, "Launch", err.Error()))
		return Failed, fmt.Errorf("launching nodeclaim %s: %w", claim.Name, err)
	case err != nil:
		if cloudprovider.IsLaunchRejected(err) {
			// The cloud answered and launched nothing: the retry is a new
			// attempt with a new token (the old one would replay this answer).
			// Persisted with the status, so a restart retries the new one.
			cloudprovider.NextLaunchAttempt(claim)
		}
		reason := events.ReasonLaunchFailed
		if r := cloudprovider.AccountSetupReason(err); r != "" {
			// The account lacks a one-time step; the message names it.
			reason = r
		}
		lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, false, reason, err.Error()), claim.Generation, now)
		l.recorder.Publish(events.Warning(claim, reason, "Launch", err.Error()))
		return Failed, fmt.Errorf("launching nodeclaim %s: %w", claim.Name, err)
	}
	PopulateStatus(claim, created)
	lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, true, "", ""), claim.Generation, now)
	// Until the cache shows this status, the lifecycle controller must not
	// take the claim for unlaunched and launch it again.
	l.cluster.Launched(claim.Name)
	l.metrics.NodeClaimsLaunched.WithLabelValues(poolOf(claim), claim.Status.CapacityType).Inc()
	l.recorder.Publish(events.Normal(claim, events.ReasonLaunched, "Launch", fmt.Sprintf("launched %s %s in %s at $%s/h (%s)",
		claim.Status.CapacityType, claim.Status.InstanceType, claim.Status.Zone, priceString(claim), claim.Status.ProviderID)))
	return Launched, nil
}

// PopulateStatus copies what the cloud reports about the instance into claim,
// labels the claim with the instance type, zone and capacity type so they
// reach the Node at registration, and keeps the provider's annotations (the
// launch facts drift compares later: node class hash, subnet, security
// groups).
func PopulateStatus(claim, created *nsv1.NodeClaim) {
	claim.Status.ProviderID = created.Status.ProviderID
	claim.Status.ImageID = created.Status.ImageID
	claim.Status.InstanceType = created.Status.InstanceType
	claim.Status.Zone = created.Status.Zone
	claim.Status.CapacityType = created.Status.CapacityType
	claim.Status.Price = created.Status.Price
	claim.Status.Capacity = created.Status.Capacity
	claim.Status.Allocatable = created.Status.Allocatable
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	for k, v := range created.Labels {
		claim.Labels[k] = v
	}
	if len(created.Annotations) > 0 && claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	for k, v := range created.Annotations {
		claim.Annotations[k] = v
	}
	for k, v := range map[string]string{
		corev1.LabelInstanceTypeStable: created.Status.InstanceType,
		corev1.LabelTopologyZone:       created.Status.Zone,
		nsv1.LabelCapacityType:         created.Status.CapacityType,
	} {
		if v != "" {
			claim.Labels[k] = v
		}
	}
}

func priceString(claim *nsv1.NodeClaim) string {
	if claim.Status.Price == "" {
		return "?"
	}
	return claim.Status.Price
}

// launch is the controller's phase: it launches claims the provisioner did not.
func (c *Controller) launch(ctx context.Context, claim *nsv1.NodeClaim) (reconcile.Result, error) {
	out, err := c.launcher.Launch(ctx, claim)
	switch out {
	case Busy:
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	case Failed:
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}
