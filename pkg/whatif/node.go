package whatif

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// NodeReport is where one node stands on voluntary disruption: what runs on
// it, each disruption method's verdict (Checks) and the pool's budgets.
type NodeReport struct {
	NodeFacts
	// Managed is false for nodes no NodeClaim backs: Nodesmith never
	// disrupts those.
	Managed bool      `json:"managed"`
	Pods    []PodFact `json:"pods,omitempty"`
	// Checks hold the disruption planner's verdict on the node (the
	// controller's own pkg/disruption.Compute over the snapshot): the
	// action that would disrupt it, or why it is left.
	Checks []Check `json:"checks,omitempty"`
	// Budgets are the pool's disruption budgets at the snapshot's time.
	Budgets []BudgetStatus `json:"budgets,omitempty"`
	// PoolNodes and Disrupting are the pool's budget ledger
	// (pkg/disruption/budget.Count): its initialized nodes, which a
	// percentage is taken of, and those of them being deleted, marked for
	// disruption or not Ready, which use up the allowance.
	PoolNodes  int `json:"poolNodes,omitempty"`
	Disrupting int `json:"disrupting,omitempty"`
	// Notes are what a snapshot cannot show.
	Notes []string `json:"notes,omitempty"`
}

// PodFact is one pod on the node and how it counts for disruption.
type PodFact struct {
	Pod string `json:"pod"`
	// Kind is workload, daemonset, static or finished; only workload pods
	// keep a node from being empty.
	Kind string `json:"kind"`
	// DoNotDisrupt is why the pod blocks voluntary disruption, if it does.
	DoNotDisrupt string `json:"doNotDisrupt,omitempty"`
}

// Check is the disruption planner's verdict on the node.
type Check struct {
	// Method is how the planner would disrupt it (Emptiness, Drift,
	// Expiration, MultiNodeConsolidation, SingleNodeConsolidation); empty
	// when it would not.
	Method string `json:"method,omitempty"`
	// Candidate says the node would be disrupted now.
	Candidate bool `json:"candidate"`
	// Forced says the method is forceful (expiry, repair): no budget, PDB
	// or do-not-disrupt holds it; the drain honours PDBs and do-not-disrupt
	// until the claim's terminationGracePeriod ends (for a repair, at once).
	Forced bool `json:"forced,omitempty"`
	// Skip is the planner's reason code for leaving the node
	// (pkg/disruption.SkipReason), empty for a candidate.
	Skip string `json:"skip,omitempty"`
	// Reason is the planner's own message: the action, or why not.
	Reason string `json:"reason"`
	// Savings is the action's $/h saving (candidates only).
	Savings float64 `json:"savings,omitempty"`
	// Allowed is how many more of the pool's nodes the budgets let be
	// disrupted for Method now.
	Allowed *int `json:"allowed,omitempty"`
}

// BudgetStatus is one budget at the snapshot's time.
type BudgetStatus struct {
	Nodes    string   `json:"nodes"`
	Schedule string   `json:"schedule,omitempty"`
	Duration string   `json:"duration,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
	// Active says the budget applies now (always, or inside its window).
	Active bool `json:"active"`
	// Allows is how many of the pool's nodes it lets be disrupted at once.
	Allows int `json:"allows"`
}

// ExplainNode reports on node name as the emptiness controller would see
// it at the snapshot's time.
func ExplainNode(snap *Snapshot, name string, opts Options) (*NodeReport, error) {
	w, err := newWorld(snap, opts)
	if err != nil {
		return nil, err
	}
	var node *corev1.Node
	for _, n := range w.idx.Nodes {
		if n.Name == name {
			node = n
		}
	}
	if node == nil {
		return nil, fmt.Errorf("node %s is not in the snapshot", name)
	}
	now := snap.TakenAt.Time
	r := &NodeReport{NodeFacts: w.nodeFacts(name)}
	pods := w.idx.PodsByNode[name]
	for _, p := range pods {
		pf := PodFact{Pod: p.Namespace + "/" + p.Name, Kind: "workload"}
		switch {
		case lifecycle.IsTerminal(p):
			pf.Kind = "finished"
		case lifecycle.IsDaemonSetPod(p):
			pf.Kind = "daemonset"
		case lifecycle.IsOwnedByNode(p):
			pf.Kind = "static"
		}
		if blocked, _, why := lifecycle.DoNotDisrupt(p, now); blocked {
			pf.DoNotDisrupt = why
		}
		r.Pods = append(r.Pods, pf)
	}
	claim := w.idx.ClaimByNode[name]
	if claim == nil {
		r.Notes = append(r.Notes, "no NodeClaim backs this node: Nodesmith did not launch it and never disrupts it")
		return r, nil
	}
	r.Managed = true
	var pool *nsv1.NodePool
	for _, np := range w.idx.NodePools {
		if np.Name == claim.Labels[nsv1.LabelNodePool] {
			pool = np
		}
	}
	if pool == nil {
		r.Notes = append(r.Notes, fmt.Sprintf("its NodePool %q is not in the snapshot", claim.Labels[nsv1.LabelNodePool]))
		return r, nil
	}
	ledger := budget.Count(w.idx.NodeClaims, func(c *nsv1.NodeClaim) *corev1.Node { return w.idx.NodeByID[c.Status.ProviderID] }, nil)[pool.Name]
	r.PoolNodes, r.Disrupting = ledger.Nodes, ledger.Disrupting
	r.Budgets = budgets(pool.Spec.Disruption.Budgets, ledger.Nodes, now)
	types, _ := w.poolTypes()
	buffered, _ := w.bufferPods()
	plan, err := disruption.Compute(disruption.Input{Snapshot: w.idx, InstanceTypes: types, NodeClasses: w.classes,
		BufferPods: buffered, Now: now, Options: disruption.Options{Solve: w.opts.Solve, NodeRepair: w.opts.NodeRepair}})
	if err != nil {
		return nil, fmt.Errorf("planning disruption: %w", err)
	}
	r.Checks = append(r.Checks, nodeCheck(plan, claim.Name, pool.Name))
	if note := repairNote(node, now, w.opts.NodeRepair); note != "" {
		r.Notes = append(r.Notes, note)
	}
	r.Notes = append(r.Notes, "the controller also keeps a node while pending pods are nominated to it, and acts on a plan only after re-checking it 15 s later; nominations live in its memory and are not in a snapshot")
	return r, nil
}

// repairNote says when node repair replaces an unhealthy node (the
// planner's own rule, disruption.Unhealthy), and that it takes the
// NodeRepair gate; "" for a healthy node.
func repairNote(node *corev1.Node, now time.Time, gate bool) string {
	h, ok := disruption.Unhealthy(node, disruption.DefaultRepairPolicies())
	if !ok {
		return ""
	}
	when := "now"
	if h.Due.After(now) {
		when = "at " + h.Due.UTC().Format(time.RFC3339)
	}
	note := fmt.Sprintf("unhealthy: %s; node repair replaces it %s, unless more than %d%% of its pool's nodes are unhealthy", h.Describe(now), when, disruption.MaxUnhealthyPercent)
	if !gate {
		note += " (only with the NodeRepair feature gate, off by default; --node-repair plans with it)"
	}
	return note
}

// budgets reports each budget: whether it is active at now and how many of
// total nodes it lets be disrupted.
func budgets(bs []nsv1.Budget, total int, now time.Time) []BudgetStatus {
	if len(bs) == 0 {
		bs = budget.Default
	}
	var out []BudgetStatus
	for _, b := range bs {
		st := BudgetStatus{Nodes: b.Nodes}
		if b.Schedule != nil {
			st.Schedule = *b.Schedule
		}
		if b.Duration != nil {
			st.Duration = b.Duration.Duration.String()
		}
		for _, r := range b.Reasons {
			st.Reasons = append(st.Reasons, string(r))
		}
		if active, err := budget.Active(b, now); err == nil {
			st.Active = active
		}
		st.Allows, _ = budget.Nodes(b.Nodes, total)
		out = append(out, st)
	}
	return out
}

// nodeCheck finds claim in the plan: an action that disrupts it, or the
// reason it was skipped.
func nodeCheck(plan *disruption.Plan, claim, pool string) Check {
	for _, a := range plan.Actions {
		for _, c := range a.Candidates {
			if c.Claim.Name != claim {
				continue
			}
			ch := Check{Method: string(a.Method), Candidate: true, Forced: a.Forced, Reason: a.Message, Savings: a.Savings}
			if n, ok := plan.Allowed[pool][a.Reason]; ok {
				ch.Allowed = &n
			}
			return ch
		}
	}
	for _, sk := range plan.Skipped {
		if sk.Claim == claim {
			return Check{Skip: string(sk.Reason), Reason: sk.Message}
		}
	}
	return Check{Reason: "no disruption method applies: the node is not empty, drifted or expired, and its pool does not consolidate under-used nodes"}
}
