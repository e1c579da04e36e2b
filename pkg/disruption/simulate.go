package disruption

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// simulate re-runs the solver with cands removed: their pods are the pods
// to place, every other node is existing capacity and the pools may launch
// within the room the candidates' removal leaves in their limits
// (poolsWithout).
func (w *working) simulate(cands []*nodeInfo) (*scheduling.Plan, error) {
	return w.simulateOnto(cands, nil)
}

// simulateOnto is simulate, with the pods also kept off the nodes of
// later (which stay for now).
func (w *working) simulateOnto(cands, later []*nodeInfo) (*scheduling.Plan, error) {
	return w.simulateWith(cands, later, w.poolsWithout(cands))
}

// simulateWith is simulateOnto with the given pools to launch from.
func (w *working) simulateWith(cands, later []*nodeInfo, pools []*scheduling.NodePool) (*scheduling.Plan, error) {
	skip := make(map[string]bool, len(cands)+len(later))
	var pods []*corev1.Pod
	for _, c := range cands {
		skip[c.name] = true
		pods = append(pods, c.movable...)
	}
	for _, c := range later {
		skip[c.name] = true
	}
	w.solves++
	plan, err := scheduling.Solve(scheduling.Input{
		Pods: pods, Nodes: w.existing(skip), NodePools: pools,
		DaemonSets: w.in.Snapshot.DaemonSets, Options: w.opts.Solve,
	})
	if err != nil {
		return nil, fmt.Errorf("simulating the removal of %s: %w", names(cands), err)
	}
	return plan, nil
}

func (w *working) candidate(n *nodeInfo, why string) *Candidate {
	return &Candidate{Claim: n.claim, Node: n.node, NodePool: n.poolName(), InstanceType: n.it, Zone: n.zone,
		CapacityType: n.ct, Price: n.price, Pods: n.movable, Why: why}
}

func (w *working) newAction(m Method, r nsv1.DisruptionReason, cands []*nodeInfo, why string) *Action {
	a := &Action{Method: m, Reason: r}
	for _, n := range cands {
		a.Candidates = append(a.Candidates, w.candidate(n, why))
		a.Pods = append(a.Pods, n.movable...)
	}
	return a
}

// deleteOnly is n deleted with no replacement planned: the provisioner
// places its pods once they are Pending.
func (w *working) deleteOnly(n *nodeInfo, m Method, r nsv1.DisruptionReason, why string) *Action {
	a := w.newAction(m, r, []*nodeInfo{n}, why)
	a.Savings = n.price
	a.Message = fmt.Sprintf("%s %s; deleting it, the provisioner places its %d pods", describe(n), why, len(n.movable))
	return a
}

// forcedReplace decides a forced disruption of n (expiry, repair): its
// replacements planned (replaceAll, forced), or, when this plan's solves
// have run out or n took pods earlier in this plan, n deleted alone
// (deleteOnly). The action is Forced.
func (w *working) forcedReplace(n *nodeInfo, m Method, r nsv1.DisruptionReason, why string) (*Action, *scheduling.Plan, error) {
	if w.solves >= w.opts.MaxSolves || n.received {
		a := w.deleteOnly(n, m, r, why)
		a.Forced = true
		return a, nil, nil
	}
	a, plan, _, _, err := w.replaceAll(n, m, r, why, true)
	if err != nil {
		return nil, nil, err
	}
	a.Forced = true
	return a, plan, nil
}

// replaceAll decides a drift or expiry of n: its pods go to other nodes and
// as many new claims as they need. Pods with nowhere to go stop a voluntary
// method; a forced one goes anyway, and they wait Pending.
func (w *working) replaceAll(n *nodeInfo, m Method, r nsv1.DisruptionReason, why string, forced bool) (*Action, *scheduling.Plan, SkipReason, string, error) {
	a := w.newAction(m, r, []*nodeInfo{n}, why)
	// A static pool's node is replaced by a node of its pool, which its
	// pods may take (static.go).
	var static *scheduling.ClaimPlan
	if n.static() {
		cp, whyNot := w.staticReplacement(n)
		if cp == nil && !forced {
			return nil, nil, SkipStaticNodeLimit, fmt.Sprintf("%s: %s; %s", describe(n), why, whyNot), nil
		}
		static = cp
	}
	if len(n.movable) == 0 {
		a.Savings = n.price
		a.Message = fmt.Sprintf("%s: %s; it runs no pods that must move, deleting it", describe(n), why)
		if static != nil {
			a.Replacements = []*scheduling.ClaimPlan{static}
			a.Savings = n.price - static.Price()
			a.Message = fmt.Sprintf("%s: %s; replacing it with a node of static nodepool %s (%d launch options from $%.4f/h)",
				describe(n), why, n.poolName(), len(static.Options), static.Price())
		}
		return a, nil, "", "", nil
	}
	if static != nil {
		w.extra = []*scheduling.ExistingNode{provisioning.ClaimRoom(static, false)}
	}
	room, roomNodes := w.heldRoom(n)
	w.extra = append(w.extra, room...)
	plan, err := w.simulateOnto([]*nodeInfo{n}, roomNodes)
	w.extra = nil
	if err != nil {
		return nil, nil, "", "", err
	}
	if static != nil {
		a.Replacements = append(a.Replacements, static)
	}
	stranded := ""
	if k := len(plan.Unschedulable); k > 0 {
		if !forced {
			return nil, nil, SkipNowhereToGo, fmt.Sprintf("%s: %s, but %d of its pods fit nowhere else: %s",
				describe(n), why, k, plan.Unschedulable[0].Reason), nil
		}
		stranded = fmt.Sprintf("; %d of its pods fit nowhere (%s) and wait Pending", k, plan.Unschedulable[0].Reason)
	}
	for _, cp := range plan.NewClaims {
		a.Replacements = append(a.Replacements, w.rename(cp))
	}
	a.Savings = n.price - a.ReplacementPrice()
	a.Message = fmt.Sprintf("%s: %s; %s%s%s", describe(n), why, moveSummary(len(a.Pods), a.Replacements), onHeldRoom(plan, roomNodes), stranded)
	return a, plan, "", "", nil
}

// heldRoom is the room a prespin command holding n launched for n's pods:
// its replacements that have initialized, are in no disruption of their own
// and are not drifted themselves. When drift or expiry takes a held node
// over, its pods may go there (they are otherwise room not counted on,
// kept for the held node's drain), so the node is not replaced twice. A
// replacement still launching is left out, as all in-flight room is: it may
// never come; a drifted one would only move the pods again.
func (w *working) heldRoom(n *nodeInfo) ([]*scheduling.ExistingNode, []*nodeInfo) {
	cmd := n.claim.Annotations[nsv1.AnnotationDisruptionCommand]
	if cmd == "" || !w.heldCommands[cmd] || n.claim.Annotations[nsv1.AnnotationDisruptionHold] != "true" {
		return nil, nil
	}
	var room []*scheduling.ExistingNode
	var nodes []*nodeInfo
	for _, r := range w.nodes {
		if r.claim.Annotations[nsv1.AnnotationReplacementFor] != cmd || r.removed || r.disrupting || r.marked || r.awaiting || r.pool == nil {
			continue
		}
		en, ok := w.base[r.name]
		if !ok || en.InFlight {
			continue
		}
		if _, _, drifted := Drifted(r.claim, r.pool, w.in.NodeClasses[nodeClassName(r.claim)]); drifted {
			continue
		}
		cp := *w.solverNode(r.name)
		cp.MarkedForDeletion = false
		room = append(room, &cp)
		nodes = append(nodes, r)
	}
	return room, nodes
}

// onHeldRoom says which of a held node's replacements (heldRoom) plan
// moves its pods to.
func onHeldRoom(plan *scheduling.Plan, room []*nodeInfo) string {
	if len(room) == 0 {
		return ""
	}
	took := map[string]int{}
	for _, nom := range plan.Nominations {
		took[nom.Node]++
	}
	var parts []string
	for _, r := range room {
		if k := took[r.name]; k > 0 {
			parts = append(parts, fmt.Sprintf("%d to %s", k, r.name))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s, launched for them on a rebalance recommendation)", strings.Join(parts, ", "))
}

// consolidate decides whether removing cands together saves money: their
// pods must fit on the other nodes plus at most one new node, and that node
// must be cheap enough (see narrow).
func (w *working) consolidate(cands []*nodeInfo, m Method) (*Action, *scheduling.Plan, SkipReason, string, error) {
	plan, err := w.simulate(cands)
	if err != nil {
		return nil, nil, "", "", err
	}
	who := describeAll(cands)
	if len(plan.Unschedulable) > 0 {
		return nil, nil, SkipNowhereToGo, fmt.Sprintf("%s: %d of the pods fit on no other node and no new one: %s",
			who, len(plan.Unschedulable), plan.Unschedulable[0].Reason), nil
	}
	price, prepaid := 0.0, true
	for _, c := range cands {
		price += c.price
		prepaid = prepaid && c.prepaid
	}
	if prepaid {
		// A node in a capacity reservation, or on-demand a commitment
		// covers, costs nothing more: removing it (or replacing it)
		// would move its pods and save nothing.
		return nil, nil, SkipNotCheaper, fmt.Sprintf("%s: it costs $0/h more (a capacity reservation or a commitment pays for it whether it runs or not), so deleting or replacing it saves nothing", who), nil
	}
	a := w.newAction(m, nsv1.DisruptionReasonUnderutilized, cands, "underutilized")
	if len(plan.NewClaims) == 0 {
		a.Savings = price
		a.Message = fmt.Sprintf("%s: underutilized, their %d pods fit on other nodes; deleting saves $%.4f/h", who, len(a.Pods), price)
		return a, plan, "", "", nil
	}
	if len(plan.NewClaims) > 1 {
		// Karpenter's rule: more new nodes would need the solver's
		// placement to be carried out as planned across several launches
		// (repack.go takes that path when the fleet's shape calls for it).
		return nil, nil, SkipNotCheaper, fmt.Sprintf("%s: the pods would need %d new nodes, and a consolidation launches at most one", who, len(plan.NewClaims)), nil
	}
	for _, c := range cands {
		if c.received {
			return nil, nil, SkipNotEvaluated, fmt.Sprintf("%s: node %s received pods from another disruption of this plan, so it may only be deleted now; replacing it waits for the next plan",
				who, c.name), nil
		}
	}
	maxPrice := price * (1 - w.opts.MinSavingsShare)
	repl, reason, msg := w.narrowAll(plan.NewClaims, cands, maxPrice, w.opts.MinSpotOptions)
	if repl == nil {
		return nil, nil, reason, who + ": " + msg, nil
	}
	most := 0.0
	for _, cp := range repl {
		cp = w.rename(cp)
		a.Replacements = append(a.Replacements, cp)
		most += cp.Options[len(cp.Options)-1].Price
	}
	a.Savings = price - a.ReplacementPrice()
	if len(repl) == 1 {
		cp := a.Replacements[0]
		a.Message = fmt.Sprintf("%s: underutilized; replacing with one %s node (%d options from $%.4f/h, at most $%.4f/h) for their %d pods saves $%.4f/h",
			who, cp.Options[0].CapacityType, len(cp.Options), cp.Price(), most, len(a.Pods), a.Savings)
	} else {
		a.Message = fmt.Sprintf("%s: underutilized; replacing with %d %s nodes (from $%.4f/h, at most $%.4f/h together) for their %d pods saves $%.4f/h",
			who, len(repl), repl[0].Options[0].CapacityType, a.ReplacementPrice(), most, len(a.Pods), a.Savings)
	}
	return a, plan, "", "", nil
}

// narrowAll narrows each of a consolidation's new claims (see narrow) to
// its share of maxPrice, the share its cheapest option has of the claims'
// cheapest total: whichever options launch, together they cost at most
// maxPrice. One claim gets all of maxPrice.
func (w *working) narrowAll(claims []*scheduling.ClaimPlan, cands []*nodeInfo, maxPrice float64, minSpot int) ([]*scheduling.ClaimPlan, SkipReason, string) {
	if len(claims) == 1 {
		cp, reason, msg := w.narrow(claims[0], cands, maxPrice, minSpot)
		if cp == nil {
			return nil, reason, msg
		}
		return []*scheduling.ClaimPlan{cp}, "", ""
	}
	total := 0.0
	for _, cp := range claims {
		total += cp.Price()
	}
	if total > maxPrice {
		return nil, SkipNotCheaper, fmt.Sprintf("no replacement saves %.0f%%: the %d new nodes the pods need cost at least $%.4f/h together, and must cost at most $%.4f/h",
			100*w.opts.MinSavingsShare, len(claims), total, maxPrice)
	}
	out := make([]*scheduling.ClaimPlan, 0, len(claims))
	for i, cp := range claims {
		narrowed, reason, msg := w.narrow(cp, cands, maxPrice*cp.Price()/total, minSpot)
		if narrowed == nil {
			return nil, reason, fmt.Sprintf("new node %d of %d: %s", i+1, len(claims), msg)
		}
		out = append(out, narrowed)
	}
	return out, "", ""
}

// narrow keeps the launch options of a consolidation's replacement that may
// be launched: no dearer than maxPrice (so the saving holds whichever
// option launches), not an offering a candidate already runs on, not a
// candidate's instance type unless cheaper than that candidate (replacing
// A and B by another A is deleting B with extra churn), not in the
// insufficient-capacity view; spot-to-spot only behind the gate and with
// minSpot options left; the pool's minValues still met.
func (w *working) narrow(cp *scheduling.ClaimPlan, cands []*nodeInfo, maxPrice float64, minSpot int) (*scheduling.ClaimPlan, SkipReason, string) {
	same := map[[3]string]bool{}
	typePrice := map[string]float64{}
	allSpot := true
	for _, c := range cands {
		same[[3]string{c.it, c.zone, c.ct}] = true
		typePrice[c.it] = max(typePrice[c.it], c.price)
		allSpot = allSpot && c.ct == nsv1.CapacityTypeSpot
	}
	var kept []scheduling.LaunchOption
	dearer, sameOffering, unavailable := 0, 0, 0
	for _, o := range cp.Options {
		tp, sameType := typePrice[o.InstanceType.Name]
		switch {
		case o.Price > maxPrice:
			dearer++
		case same[[3]string{o.InstanceType.Name, o.Zone, o.CapacityType}] || (sameType && o.Price >= tp):
			sameOffering++
		case w.in.Unavailable != nil && w.in.Unavailable(o.InstanceType.Name, o.Zone, o.CapacityType):
			unavailable++
		default:
			kept = append(kept, o)
		}
	}
	if len(kept) == 0 {
		cheapest := cp.Options[0]
		return nil, SkipNotCheaper, fmt.Sprintf("no replacement saves %.0f%%: the cheapest, %s %s in %s at $%.4f/h, needs to cost at most $%.4f/h (%d options dearer, %d of the nodes' own offerings or types, %d out of capacity)",
			100*w.opts.MinSavingsShare, cheapest.CapacityType, cheapest.InstanceType.Name, cheapest.Zone, cheapest.Price, maxPrice, dearer, sameOffering, unavailable)
	}
	if allSpot && kept[0].CapacityType == nsv1.CapacityTypeSpot {
		if !w.opts.SpotToSpotConsolidation {
			return nil, SkipSpotToSpotDisabled, fmt.Sprintf("only a spot-to-spot replacement (from $%.4f/h) would save, and the SpotToSpotConsolidation feature gate is off", kept[0].Price)
		}
		if len(kept) < minSpot {
			return nil, SkipSpotToSpotFlexibility, fmt.Sprintf("the spot-to-spot replacement would keep %d spot options cheaper than $%.4f/h, fewer than %d", len(kept), maxPrice, minSpot)
		}
	}
	out := *cp
	out.Options = kept
	out.Requirements = cp.Requirements.Clone()
	var typeNames, zones []string
	for _, o := range kept {
		typeNames = append(typeNames, o.InstanceType.Name)
		zones = append(zones, o.Zone)
	}
	narrowTo(out.Requirements, corev1.LabelInstanceTypeStable, typeNames)
	narrowTo(out.Requirements, corev1.LabelTopologyZone, zones)
	if msg := unmetMinValues(out.Requirements, kept); msg != "" {
		return nil, SkipNotCheaper, "the options cheap enough to save " + msg
	}
	return &out, "", ""
}

// narrowTo sets key's requirement to In values, keeping its minValues.
func narrowTo(reqs scheduling.Requirements, key string, values []string) {
	r := scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, values...)
	if prev := reqs.Get(key); prev != nil {
		r.MinValues = prev.MinValues
	}
	reqs[key] = r
}

// unmetMinValues names a minValues requirement the options do not meet.
func unmetMinValues(reqs scheduling.Requirements, opts []scheduling.LaunchOption) string {
	for _, k := range reqs.Keys() {
		r := reqs[k]
		if r.MinValues == nil {
			continue
		}
		distinct := map[string]bool{}
		for _, o := range opts {
			switch k {
			case corev1.LabelTopologyZone:
				distinct[o.Zone] = true
			case nsv1.LabelCapacityType:
				distinct[o.CapacityType] = true
			default:
				if v, ok := o.InstanceType.Labels[k]; ok {
					distinct[v] = true
				}
			}
		}
		if len(distinct) < *r.MinValues {
			return fmt.Sprintf("have %d values of %s, below its minValues %d", len(distinct), k, *r.MinValues)
		}
	}
	return ""
}

// rename gives a planned replacement a name unique within the plan (every
// solve numbers its claims from claim-0001).
func (w *working) rename(cp *scheduling.ClaimPlan) *scheduling.ClaimPlan {
	out := *cp
	w.replacements++
	out.Name = fmt.Sprintf("replacement-%04d", w.replacements)
	return &out
}

func describe(n *nodeInfo) string {
	return fmt.Sprintf("node %s (%s %s in %s, $%.4f/h)", n.name, n.ct, n.it, n.zone, n.price)
}

func describeAll(ns []*nodeInfo) string {
	if len(ns) == 1 {
		return describe(ns[0])
	}
	total := 0.0
	for _, n := range ns {
		total += n.price
	}
	return fmt.Sprintf("%d nodes (%s; $%.4f/h)", len(ns), names(ns), total)
}

func names(ns []*nodeInfo) string {
	const show = 5
	var parts []string
	for i, n := range ns {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(ns)-show))
			break
		}
		parts = append(parts, n.name)
	}
	return strings.Join(parts, ", ")
}

func moveSummary(pods int, repl []*scheduling.ClaimPlan) string {
	if len(repl) == 0 {
		return fmt.Sprintf("its %d pods fit on other nodes", pods)
	}
	price := 0.0
	for _, r := range repl {
		price += r.Price()
	}
	return fmt.Sprintf("its %d pods move to other nodes and %d new nodes (from $%.4f/h)", pods, len(repl), price)
}
