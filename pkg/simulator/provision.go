package simulator

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// Timings of the provisioner's controllers (pkg/controllers/provisioning and
// cmd/controller defaults): a pending pod is looked at again every 10s, and a
// nomination keeps a pod out of new batches for a minute.
const (
	podRecheck    = 10 * time.Second
	nominationTTL = time.Minute
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
// is pending and holds no nomination it triggers a batch, every podRecheck.
func (s *Sim) podController(p *pod) {
	if p.state != podPending {
		return
	}
	if s.heldTarget(p) == "" {
		s.triggerProvisioning(p)
	}
	s.after(podRecheck, func() { s.podController(p) })
}

// nominate records that the plan put p on target.
func (s *Sim) nominate(p *pod, target string) {
	p.nominated, p.nominatedAt = target, s.now
}

// heldTarget is the target of p's nomination while it holds (within
// nominationTTL), or "".
func (s *Sim) heldTarget(p *pod) string {
	if p.nominated == "" || s.now-p.nominatedAt >= nominationTTL {
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

// maxRounds bounds re-planning within one cycle after launches found no
// capacity, as the provisioner's MaxRounds default does.
const maxRounds = 3

// provision is one provisioning cycle, gathered the way the provisioner
// controller gathers it (pkg/controllers/provisioning): pods that are
// provisionable and not nominated are planned; nominated pods count as taken
// room on their node or in-flight claim. A round whose launches ran out of
// capacity is re-planned at once, up to maxRounds.
func (s *Sim) provision() {
	for round := 0; round < maxRounds; round++ {
		if !s.provisionRound() {
			break
		}
	}
	s.kickBinder()
}

// provisionRound solves and launches once; it reports whether a launch ran
// out of capacity (so the round should be re-planned).
func (s *Sim) provisionRound() bool {
	var pods []*corev1.Pod
	byUID := map[types.UID]*pod{}
	nominated := map[string][]*corev1.Pod{}
	for _, p := range s.pending {
		if p.state != podPending {
			continue
		}
		if ok, _ := lifecycle.IsProvisionable(p.obj); !ok {
			continue
		}
		if target := s.heldTarget(p); target != "" {
			nominated[target] = append(nominated[target], p.obj)
			continue
		}
		pods = append(pods, p.obj)
		byUID[p.obj.UID] = p
	}
	if len(pods) == 0 {
		return false
	}
	var existing []*scheduling.ExistingNode
	for _, n := range s.nodes {
		if n.gone {
			continue
		}
		en := &scheduling.ExistingNode{
			Name: n.name, Labels: n.obj.Labels, Taints: n.obj.Spec.Taints, Allocatable: n.obj.Status.Allocatable,
			Pods: append(n.podObjs(), nominated[n.name]...), MarkedForDeletion: n.deleting,
		}
		if n.claim != nil {
			en.InFlight = !lifecycle.IsTrue(n.claim.Status.Conditions, nsv1.ConditionInitialized)
		}
		existing = append(existing, en)
	}
	var pools []*scheduling.NodePool
	for _, np := range s.pools {
		its, err := s.cloud.GetInstanceTypes(s.ctx, np)
		if err != nil {
			s.fail(fmt.Errorf("instance types of pool %s: %w", np.Name, err))
			return false
		}
		s.updatePoolStatus(np)
		sp := scheduling.NodePoolFromAPI(np, its)
		sp.Labels[nsv1.LabelNodePool] = np.Name
		pools = append(pools, sp)
	}
	plan, err := scheduling.Solve(scheduling.Input{Pods: pods, Nodes: existing, NodePools: pools, DaemonSets: s.daemonSets})
	if err != nil {
		s.fail(fmt.Errorf("solving %d pods: %w", len(pods), err))
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

// updatePoolStatus is the pool's usage as the provisioner counts it: the
// capacity of its claims not being deleted.
func (s *Sim) updatePoolStatus(np *nsv1.NodePool) {
	total := corev1.ResourceList{}
	var count int64
	for _, n := range s.nodes {
		if n.gone || n.deleting || n.pool != np.Name {
			continue
		}
		count++
		capacity := n.claim.Status.Capacity
		if len(capacity) == 0 {
			capacity = n.it.Capacity
		}
		for name, q := range capacity {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	np.Status.Resources, np.Status.Nodes = total, count
}

// claimFor turns a planned claim into the NodeClaim the provisioner creates.
func (s *Sim) claimFor(cp *scheduling.ClaimPlan, np *nsv1.NodePool) *nsv1.NodeClaim {
	s.claimSerial++
	tmpl := np.Spec.Template
	labels := map[string]string{nsv1.LabelNodePool: np.Name}
	for k, v := range cp.Labels {
		labels[k] = v
	}
	claim := &nsv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s-%05d", np.Name, s.claimSerial),
			Labels:            labels,
			Annotations:       tmpl.ObjectMeta.Annotations,
			CreationTimestamp: metav1.NewTime(s.clock.Now()),
			Generation:        1,
		},
		Spec: nsv1.NodeClaimSpec{
			Requirements:           cp.Requirements.NodeSelectorRequirements(),
			Resources:              nsv1.ResourceRequirements{Requests: cp.Requests},
			Taints:                 cp.Taints,
			StartupTaints:          cp.StartupTaints,
			NodeClassRef:           tmpl.Spec.NodeClassRef,
			ExpireAfter:            tmpl.Spec.ExpireAfter,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
		},
	}
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
