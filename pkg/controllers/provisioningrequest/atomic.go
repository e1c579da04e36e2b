package provisioningrequest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// atomic serves a best-effort-atomic-scale-up request: plan and create
// its claims once, then follow their launch to Provisioned, or roll the
// whole set back and fail.
func (c *Controller) atomic(ctx context.Context, key string, pr, base *prv1.ProvisioningRequest) (reconcile.Result, error) {
	names := detail(pr, prv1.DetailNodeClaims)
	c.mu.Lock()
	if len(names) == 0 {
		names = c.planned[key]
	}
	c.mu.Unlock()
	if len(names) > 0 {
		setDetail(pr, prv1.DetailNodeClaims, names)
		return c.follow(ctx, key, pr, names)
	}
	if _, planned := pr.Status.ProvisioningClassDetails[prv1.DetailNodeClaims]; planned {
		// Planned with no new claim: every pod fit on existing room, and
		// the request was Provisioned in the same write.
		return reconcile.Result{}, nil
	}
	pods, snap, err := c.podsAndSnapshot(ctx, pr)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	typesByPool := map[string][]*catalog.InstanceType{}
	for _, np := range provisioning.UsablePools(snap) {
		its, err := c.types.GetInstanceTypes(ctx, np)
		if err != nil {
			c.recorder.Publish(events.Warning(np, "InstanceTypesUnavailable", "ProvisioningRequest", err.Error()))
			continue
		}
		typesByPool[np.Name] = its
	}
	held := provisioning.PendingPods(snap, c.cluster.Nominated, c.clk.Now()).Held
	in, byName := provisioning.BuildInput(snap, provisioning.Pending{Held: held}, typesByPool, c.opts.Solve)
	v, err := provisioning.PlanAtomic(in, pods)
	if err != nil {
		return reconcile.Result{}, err
	}
	if res, again := c.retryIfNotFit(key, pr, v); again {
		return res, nil
	}
	claims := make([]*nsv1.NodeClaim, 0, len(v.Plan.NewClaims))
	for _, cp := range v.Plan.NewClaims {
		claim := provisioning.NewNodeClaim(byName[cp.NodePool], cp, c.opts.NewName(cp.NodePool))
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations[provisioning.AnnotationRequestPod] = key
		claims, names = append(claims, claim), append(names, claim.Name)
	}
	setDetail(pr, DetailNodes, targets(v.Plan, nil))
	setDetail(pr, prv1.DetailNodeClaims, names)
	if len(claims) == 0 {
		c.cluster.Book(key, targets(v.Plan, nil), c.clk.Now().Add(provisioning.BookingWindow))
		c.apply(pr, provisioning.RequestVerdict{Provisioned: lifecycle.Condition(prv1.ConditionProvisioned, true, "",
			fmt.Sprintf("all %d pods fit on existing nodes; booked for them for %s", len(pods), provisioning.BookingWindow))})
		return reconcile.Result{}, nil
	}
	// The names are written before the claims exist, so a restart finds
	// (and can roll back) every claim of the set.
	c.apply(pr, v)
	if err := c.write(ctx, base, pr); err != nil {
		return reconcile.Result{}, err
	}
	*base = *pr.DeepCopy()
	c.mu.Lock()
	c.planned[key] = names
	c.mu.Unlock()
	for i, claim := range claims {
		c.mu.Lock()
		c.created[claim.Name] = c.clk.Now()
		c.mu.Unlock()
		if err := c.kube.Create(ctx, claim); err != nil {
			c.mu.Lock()
			delete(c.created, names[i])
			c.mu.Unlock()
			// The set is rolled back on the next pass: the claims not
			// created count as gone (follow).
			return reconcile.Result{}, fmt.Errorf("creating nodeclaim %s of provisioningrequest %s: %w", claim.Name, key, err)
		}
		c.metrics.NodeClaimsCreated.WithLabelValues(claim.Labels[nsv1.LabelNodePool], "provisioningrequest").Inc()
	}
	c.recorder.Publish(events.Normal(pr, "Launching", "ProvisioningRequest",
		fmt.Sprintf("created %d nodeclaims for %d pods", len(claims), len(pods))))
	return reconcile.Result{RequeueAfter: launchCheck}, nil
}

// follow looks at the request's claims: all launched → Provisioned and
// booked; one failed → all deleted, Failed; else wait.
func (c *Controller) follow(ctx context.Context, key string, pr *prv1.ProvisioningRequest, names []string) (reconcile.Result, error) {
	states := make([]provisioning.ClaimLaunch, 0, len(names))
	for _, name := range names {
		st, err := c.claim(ctx, name)
		if err != nil {
			return reconcile.Result{}, err
		}
		states = append(states, st)
	}
	v := provisioning.AtomicLaunch(states)
	switch {
	case v.Failed != nil:
		if err := c.rollback(ctx, names); err != nil {
			return reconcile.Result{}, err // Failed is written once the set is gone
		}
	case v.Provisioned.Status == metav1.ConditionTrue:
		c.cluster.Book(key, append(detail(pr, DetailNodes), names...), c.clk.Now().Add(provisioning.BookingWindow))
	default:
		c.set(pr, v.Provisioned)
		return reconcile.Result{RequeueAfter: launchCheck}, nil
	}
	c.apply(pr, v)
	return reconcile.Result{}, nil
}

// rollback deletes the request's claims (the termination controller
// terminates their instances).
func (c *Controller) rollback(ctx context.Context, names []string) error {
	for _, name := range names {
		nc := &nsv1.NodeClaim{}
		nc.Name = name
		// Deleted by name, not from the cache: a claim created a moment ago
		// may not be there yet.
		if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("rolling back nodeclaim %s: %w", name, err)
		}
	}
	return nil
}
