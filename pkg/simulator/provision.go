package simulator

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// triggerProvisioning adds a provisionable pod to the batching window.
func (s *Sim) triggerProvisioning(p *pod) {
	if ok, _ := lifecycle.IsProvisionable(p.obj); !ok {
		return
	}
	s.window.Add(s.clock.Now(), string(p.obj.UID))
	s.armWindow()
}

// podController plays the provisioning pod controller for one pod: while it
// is pending it triggers a batch every provisioning.DefaultRecheckInterval,
// nominated or not (the cycle decides whether a nomination still holds).
func (s *Sim) podController(p *pod) {
	if p.state != podPending {
		return
	}
	s.triggerProvisioning(p)
	s.after(provisioning.DefaultRecheckInterval, func() { s.podController(p) })
}

// nominate records that the plan put p on target.
func (s *Sim) nominate(p *pod, target string) {
	p.nominated, p.nominatedAt = target, s.now
}

// heldTarget is the target of p's nomination while it holds (within
// provisioning.DefaultNominationTTL), or "".
func (s *Sim) heldTarget(p *pod) string {
	if p.nominated == "" || s.now-p.nominatedAt >= provisioning.DefaultNominationTTL {
		return ""
	}
	return p.nominated
}

// armWindow makes sure an event fires when the window may be due. The
// deadline only moves later as pods arrive, so one pending check suffices: a
// check that finds the window not yet due re-arms itself.
func (s *Sim) armWindow() {
	if s.windowArmed {
		return
	}
	deadline, ok := s.window.NextDeadline()
	if !ok {
		return
	}
	s.windowArmed = true
	s.schedule(deadline.Sub(Epoch), prioNormal, func() {
		s.windowArmed = false
		if s.window.Due(s.clock.Now()) {
			s.window.Flush()
			s.provision()
			return
		}
		s.armWindow()
	})
}

// provision is one provisioning cycle, gathered by the provisioner's own
// code (pkg/provisioning.PendingPods and BuildInput) from a snapshot of the
// simulated cluster. A round whose launches ran out of capacity is
// re-planned at once, up to provisioning.MaxReplanRounds.
func (s *Sim) provision() {
	for round := 0; round < provisioning.MaxReplanRounds; round++ {
		if !s.provisionRound() {
			break
		}
	}
	s.kickBinder()
}

// provisionRound solves and launches once; it reports whether a launch ran
// out of capacity (so the round should be re-planned).
func (s *Sim) provisionRound() bool {
	snap, byUID := s.snapshot()
	nominated := func(uid types.UID) (string, bool) {
		target := s.heldTarget(byUID[uid])
		return target, target != ""
	}
	pending := provisioning.PendingPods(snap, nominated, s.clock.Now())
	for _, uid := range pending.Lapsed {
		byUID[uid].nominated = ""
	}
	if len(pending.Pods) == 0 {
		return false
	}
	typesByPool := map[string][]*catalog.InstanceType{}
	for _, np := range provisioning.UsablePools(snap) {
		its, err := s.cloud.GetInstanceTypes(s.ctx, np)
		if err != nil {
			s.fail(fmt.Errorf("instance types of pool %s: %w", np.Name, err))
			return false
		}
		typesByPool[np.Name] = its
	}
	in, _ := provisioning.BuildInput(snap, pending, typesByPool,
		scheduling.Options{MaxOptionsPerClaim: provisioning.DefaultMaxOptionsPerClaim})
	plan, err := scheduling.Solve(in)
	if err != nil {
		s.fail(fmt.Errorf("solving %d pods: %w", len(in.Pods), err))
		return false
	}
	for _, nom := range plan.Nominations {
		if p := byUID[nom.Pod.UID]; p != nil {
			s.nominate(p, nom.Node)
		}
	}
	for _, u := range plan.Unschedulable {
		if p := byUID[u.Pod.UID]; p != nil {
			// One note per distinct reason, not per pod.
			key := strings.ReplaceAll(u.Reason, p.obj.Namespace+"/"+p.obj.Name, "")
			s.noteOnce("unschedulable:"+key, "pod %s cannot be placed: %s", p.obj.Name, u.Reason)
		}
	}
	s.batchFailures, s.batchFirstErr = 0, ""
	outOfCapacity := false
	for _, cp := range plan.NewClaims {
		outOfCapacity = !s.launch(cp, byUID) || outOfCapacity
	}
	s.drainProviderEvents()
	if s.batchFailures > 0 {
		s.note("%d of %d launches failed; the first: %s", s.batchFailures, len(plan.NewClaims), truncate(s.batchFirstErr, 240))
	}
	if cached := len(s.unavailable.Entries()); cached != s.iceCached {
		if cached > s.iceCached {
			s.note("the ICE cache now hides %d offerings (was %d)", cached, s.iceCached)
		}
		s.iceCached = cached
	}
	return outOfCapacity
}

// snapshot is the simulated cluster as the provisioner's cache would show
// it: pending pods, registered nodes with their pods, every live claim (a
// claim whose node has not registered is in flight), pools and DaemonSets.
// byUID finds the simulator's pod for each pending pod.
func (s *Sim) snapshot() (*provisioning.Snapshot, map[types.UID]*pod) {
	snap := &provisioning.Snapshot{
		NodePools: s.pools, DaemonSets: s.daemonSets,
		PodsByNode: map[string][]*corev1.Pod{}, ClaimByNode: map[string]*nsv1.NodeClaim{},
	}
	byUID := map[types.UID]*pod{}
	for _, p := range s.pending {
		if p.state == podPending {
			snap.Pods = append(snap.Pods, p.obj)
			byUID[p.obj.UID] = p
		}
	}
	for _, n := range s.nodes {
		if n.gone {
			continue
		}
		var claim *nsv1.NodeClaim
		if !n.system() {
			claim = s.claimView(n)
			snap.NodeClaims = append(snap.NodeClaims, claim)
			if claim.Status.NodeName == "" {
				continue
			}
			snap.ClaimByNode[n.name] = claim
		}
		snap.Nodes = append(snap.Nodes, n.obj)
		snap.PodsByNode[n.name] = n.podObjs()
	}
	return snap, byUID
}

// claimFor turns a planned claim into the NodeClaim the provisioner creates
// (pkg/provisioning.NewNodeClaim), with the fields the API server would set.
func (s *Sim) claimFor(cp *scheduling.ClaimPlan, np *nsv1.NodePool) *nsv1.NodeClaim {
	s.claimSerial++
	claim := provisioning.NewNodeClaim(np, cp, fmt.Sprintf("%s-%05d", np.Name, s.claimSerial))
	claim.CreationTimestamp = metav1.NewTime(s.clock.Now())
	claim.Generation = 1
	claim.UID = types.UID(claim.Name)
	return claim
}

func (s *Sim) pool(name string) *nsv1.NodePool {
	for _, np := range s.pools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

// launch creates the claim through the cloud provider and registers the
// instance's node-to-be; a failed launch sends the claim's pods back to the
// provisioner.
func (s *Sim) launch(cp *scheduling.ClaimPlan, byUID map[types.UID]*pod) (hadCapacity bool) {
	np := s.pool(cp.NodePool)
	if np == nil {
		s.fail(fmt.Errorf("plan names unknown pool %q", cp.NodePool))
		return true
	}
	claim := s.claimFor(cp, np)
	created, err := s.cloud.Create(s.ctx, claim)
	if err != nil {
		reason := "other"
		switch {
		case cloudprovider.IsInsufficientCapacity(err):
			reason = "insufficient capacity"
		case cloudprovider.IsNodeClassNotReady(err):
			reason = "node class not ready"
		}
		s.failures[reason]++
		s.batchFailures++
		if s.batchFirstErr == "" {
			s.batchFirstErr = fmt.Sprintf("%s for %d pods (%s): %v", claim.Name, len(cp.Pods), reason, err)
		}
		for _, po := range cp.Pods {
			if p := byUID[po.UID]; p != nil {
				p.nominated = ""
			}
		}
		return !cloudprovider.IsInsufficientCapacity(err)
	}
	it, ok := s.catalog.Get(created.Status.InstanceType)
	if !ok {
		s.fail(fmt.Errorf("launched unknown instance type %q", created.Status.InstanceType))
		return true
	}
	price := quantityFloat(created.Status.Price)
	if price == 0 {
		if o, ok := it.Offerings.Get(created.Status.Zone, created.Status.CapacityType); ok {
			price = o.Price
		}
	}
	o := catalog.Offering{Zone: created.Status.Zone, CapacityType: created.Status.CapacityType, Price: price}
	labels := it.LabelsFor(o)
	for k, v := range created.Labels {
		labels[k] = v
	}
	labels[nsv1.LabelNodeClaim] = created.Name
	n := s.newNode(created.Name, it, o, labels, created.Spec.Taints)
	if len(created.Status.Allocatable) > 0 {
		n.obj.Status.Allocatable = created.Status.Allocatable
		n.alloc = toResources(created.Status.Allocatable)
	}
	n.claim = created
	n.pool = np.Name
	n.instanceID = instanceID(created.Status.ProviderID)
	s.nodesByInstance[n.instanceID] = n
	lifecycle.SetCondition(&created.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, true, "", ""), created.Generation, metav1.NewTime(s.clock.Now()))
	n.launch = len(s.launches)
	s.launches = append(s.launches, output.Launch{
		NodeClaim: created.Name, Pool: np.Name, InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType,
		Price: price, OnDemandPrice: it.OnDemandPrice, LaunchedAt: s.now,
	})
	if want := cp.Options; len(want) > 0 && want[0].CapacityType != o.CapacityType {
		s.note("%s launched as %s %s in %s; the plan's cheapest option was %s %s in %s", created.Name, o.CapacityType, it.Name, o.Zone,
			want[0].CapacityType, want[0].InstanceType.Name, want[0].Zone)
	}

	for _, po := range cp.Pods {
		if p := byUID[po.UID]; p != nil {
			s.nominate(p, created.Name)
		}
	}
	// The world boots the instance BootDelay from now; make sure it is ticked then.
	s.after(s.sc.World.BootDelay.Duration, func() {})
	s.after(s.timeouts.Registration, func() { s.liveness(n) })
	return true
}

// liveness applies the NodeClaim lifecycle's registration timeout: a claim
// whose node never registered is deleted and its pods planned again.
func (s *Sim) liveness(n *node) {
	if n.gone || n.deleting {
		return
	}
	v := lifecycle.Liveness(n.claim, s.clock.Now(), s.timeouts)
	if !v.Delete {
		if v.RecheckAfter > 0 {
			s.after(v.RecheckAfter, func() { s.liveness(n) })
		}
		return
	}
	s.note("%s deleted: %s", n.name, v.Reason)
	s.deleteNode(n, "registration timeout")
	s.unnominate(n.name)
}

func quantityFloat(q *resource.Quantity) float64 {
	if q == nil {
		return 0
	}
	return q.AsApproximateFloat64()
}

// instanceID is the last segment of an aws:///zone/i-… provider ID.
func instanceID(providerID string) string {
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

// noteOnce records a note the first time its key is seen.
func (s *Sim) noteOnce(key, format string, a ...any) {
	if s.noted == nil {
		s.noted = map[string]bool{}
	}
	if s.noted[key] {
		return
	}
	s.noted[key] = true
	s.note(format, a...)
}

func truncate(v string, n int) string {
	if len(v) <= n {
		return v
	}
	return v[:n] + "…"
}
