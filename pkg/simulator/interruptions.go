package simulator

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// interruptions pairs every notice the simulated AWS sends about a
// Nodesmith node with what the product did about it, for the report: the
// disruption executor's command for the node (the replacements its
// candidate's nodesmith.sh/disruption-replacements annotation names, each
// launched with nodesmith.sh/replacement-for, announced by the
// ReplacementPlanned Event), when that capacity was ready (the
// replacement's Initialized Event), when the node was drained
// (InterruptionDrain) and how many pods left it before a ready place was
// waiting for them.
type interruptions struct {
	s    *Sim
	list []*output.Interruption
	// open is each claim's latest record, which the handler's Events fill in.
	open map[string]*output.Interruption
	// readyAt is when each NodeClaim was initialized.
	readyAt map[string]time.Duration
}

func newInterruptions(s *Sim) *interruptions {
	return &interruptions{s: s, open: map[string]*output.Interruption{}, readyAt: map[string]time.Duration{}}
}

// notice starts the record of a notice about instance in.
func (x *interruptions) notice(kind string, in fakeaws.Instance) {
	var deadline time.Duration
	if !in.InterruptAt.IsZero() {
		deadline = in.InterruptAt.Sub(Epoch)
	}
	x.start(kind, in, deadline)
}

// blockEnding starts the record of a claim in a Capacity Block that the
// product marked CapacityBlockExpiring (its CapacityBlocks reconciler's
// Event): no message from AWS announces a block's end, the product reads
// it from the reservation. The deadline is when the simulated AWS reclaims
// the block's instances.
func (x *interruptions) blockEnding(claim string) {
	if r := x.open[claim]; r != nil && r.Kind == kindCapacityBlock {
		return // the Event is published again on a later reconcile
	}
	bl := x.s.bill.byClaim[claim]
	if bl == nil {
		return
	}
	in, ok := x.s.world.Instance(bl.id)
	if !ok {
		return
	}
	if at, ok := x.s.reclaimAt[in.CapacityReservationID]; ok {
		x.start(kindCapacityBlock, in, at)
	}
}

// kindCapacityBlock is the Kind of a Capacity Block's end in the report.
const kindCapacityBlock = "capacity block ending"

// start opens the record of a notice about instance in whose instance
// goes away at deadline (0: none, as for a rebalance recommendation).
func (x *interruptions) start(kind string, in fakeaws.Instance, deadline time.Duration) {
	bl := x.s.bill.instances[in.ID]
	if bl == nil || bl.claim == "" {
		return // not a Nodesmith node
	}
	r := &output.Interruption{At: x.s.now, Kind: kind, NodeClaim: bl.claim, Instance: strings.ToLower(in.ID),
		InstanceType: in.Type, Zone: in.Zone, Pods: x.podsOn(in.ID)}
	if deadline > 0 {
		r.Deadline = reached(deadline)
	}
	if prev := x.open[bl.claim]; prev != nil {
		// A rebalance recommendation prespun the replacement this notice uses.
		r.Planned, r.Replacements = prev.Planned, prev.Replacements
	}
	x.open[bl.claim] = r
	x.list = append(x.list, r)
	if !r.Deadline.Reached {
		return
	}
	// At the deadline EC2 reclaims the instance: how many pods of the
	// workloads it ran are not running elsewhere then?
	node := x.s.kubelets.nodeOf[in.ID]
	owners := map[owner]bool{}
	for p := range x.s.kubelets.podsOn[node] {
		if !p.daemon && p.owner != nil {
			owners[p.owner] = true
		}
	}
	x.s.schedule(r.Deadline.At, prioNormal, func() { r.NotRunningAtDeadline = x.notRunning(owners, node) })
}

// notRunning counts the pods of owners that are not running elsewhere
// than node: pending, starting, lost with a dead node, or still on node.
func (x *interruptions) notRunning(owners map[owner]bool, node string) int {
	n := 0
	for _, p := range x.s.pods {
		if !owners[p.owner] || p.deleting {
			continue
		}
		if p.state == podPending || p.state == podStarting || p.state == podLost || (p.state == podRunning && node != "" && p.node == node) {
			n++
		}
	}
	return n
}

// podsOn counts the workload pods an instance's node runs.
func (x *interruptions) podsOn(instanceID string) int {
	node, ok := x.s.kubelets.nodeOf[instanceID]
	if !ok {
		return 0
	}
	n := 0
	for p := range x.s.kubelets.podsOn[node] {
		if !p.daemon && !p.deleting && (p.state == podStarting || p.state == podRunning) {
			n++
		}
	}
	return n
}

// event reads the handler's and the lifecycle's Events about claims.
func (x *interruptions) event(regarding any, reason, msg string) {
	claim, ok := regarding.(*nsv1.NodeClaim)
	if !ok {
		return
	}
	if reason == "Initialized" {
		if _, seen := x.readyAt[claim.Name]; !seen {
			x.readyAt[claim.Name] = x.s.now
		}
		return
	}
	if reason == "CapacityBlockExpiring" {
		x.blockEnding(claim.Name)
		return
	}
	r := x.open[claim.Name]
	if r == nil {
		return
	}
	switch reason {
	case "ReplacementPlanned":
		r.Planned = reached(x.s.now)
		r.Replacements = x.command(claim.Name, plannedTargets(msg))

	case "InterruptionDrain":
		if r.Drained.Reached {
			return
		}
		r.Drained = reached(x.s.now)
		r.DrainReason = strings.TrimPrefix(msg, "draining: ")
		r.Stranded = x.stranded(r)
	}
}

// command reads the executor's command for a claim from the claim itself:
// the replacements its annotation names are new nodes (with the pods the
// Event counts on each); the rest of the Event's pods fit on running nodes.
func (x *interruptions) command(claim string, counts []output.Replacement) []output.Replacement {
	cur := &nsv1.NodeClaim{}
	if err := x.s.kube.Get(x.s.ctx, types.NamespacedName{Name: claim}, cur); err != nil {
		return nil
	}
	pods := map[string]int{}
	for _, c := range counts {
		pods[c.Target] = c.Pods
	}
	var out []output.Replacement
	for _, name := range cur.DisruptionReplacements() {
		out = append(out, output.Replacement{Target: name, Pods: pods[name], NewNode: true})
		delete(pods, name)
	}
	running := 0
	for _, n := range pods {
		running += n
	}
	if running > 0 {
		out = append(out, output.Replacement{Target: "nodes", Pods: running})
	}
	return out
}

// stranded are the pods still on r's node that no ready place waits for.
func (x *interruptions) stranded(r *output.Interruption) int {
	left := 0
	if bl := x.s.bill.byClaim[r.NodeClaim]; bl != nil {
		left = x.podsOn(bl.id)
	}
	for _, t := range r.Replacements {
		at, ready := x.readyAt[t.Target]
		if !t.NewNode || (ready && at <= x.s.now) {
			left -= t.Pods
		}
	}
	return max(left, 0)
}

// gone closes the record of an instance that stopped; a node never
// drained lost every pod it still ran.
func (x *interruptions) gone(in fakeaws.Instance) {
	bl := x.s.bill.instances[in.ID]
	if bl == nil {
		return
	}
	r := x.open[bl.claim]
	if r == nil || r.Gone.Reached {
		return
	}
	r.Gone = reached(x.s.now)
	if !r.Drained.Reached {
		r.Stranded = x.podsOn(in.ID)
	}
}

// records fills in the replacements' launches and readiness.
func (x *interruptions) records() []output.Interruption {
	out := make([]output.Interruption, 0, len(x.list))
	for _, r := range x.list {
		c := *r
		c.Replacements = append([]output.Replacement(nil), r.Replacements...)
		for i := range c.Replacements {
			t := &c.Replacements[i]
			if bl := x.s.bill.byClaim[t.Target]; bl != nil {
				t.InstanceType, t.Launched = bl.launch.InstanceType, reached(bl.launch.LaunchedAt)
			}
			if at, ok := x.readyAt[t.Target]; ok {
				t.Ready = reached(at)
			}
		}
		out = append(out, c)
	}
	return out
}

// plannedTargets reads how many pods a ReplacementPlanned Event counts
// where ("... (15 to move): 12 on spot-00005, 3 on running nodes").
func plannedTargets(msg string) []output.Replacement {
	i := strings.LastIndex(msg, "): ")
	if i < 0 {
		return nil
	}
	list := msg[i+len("): "):]
	var out []output.Replacement
	for _, part := range strings.Split(list, ", ") {
		var n int
		var target string
		if _, err := fmt.Sscanf(part, "%d on %s", &n, &target); err == nil {
			out = append(out, output.Replacement{Target: target, Pods: n})
		}
	}
	return out
}
