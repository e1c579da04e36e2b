package disruption

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Repacking: consolidation toward the from-scratch plan.
//
// Multi- and single-node consolidation move pods onto the nodes that stay,
// which is right while those nodes are the right shape for what is left.
// After a burst they often are not: the lab's 1,000 pods of 500m ran on
// eight 64-vCPU c6g.16xlarge; scaled to 100 pods, deletion after deletion
// (each one saving the most) packed the 50 vCPU of pods onto one
// c6g.16xlarge at $0.56/h, and there it stuck, because a fresh plan for
// the pods is two nodes (a 48-vCPU claim and a small one, $0.46/h) and no
// single cheaper node holds them, while a split of one node into two cannot
// keep the savings whatever options launch: the big claim needs dearer
// families for the pool's minValues and the spot flexibility floor. Once
// one node is left the from-scratch plan is out of reach; while several
// nodes are left their price pays for it.
//
// So first, per pool (before emptiness, so the pool's empty nodes can
// take part): estimate where deleting alone would leave the fleet
// (deletionFloor), then solve the candidates' pods from scratch (one
// solve).
// Only when the from-scratch plan saves at least MinSavingsShare against
// that estimate, remove as many candidates as the budget allows — the
// nodes that run pods first, fewest pods per dollar first, then empty
// ones — onto the nodes that are no candidate when their pods fit there,
// else launch the from-scratch claims their pods land on, sized for
// every candidate's pods, so the next rounds move the rest of the pods
// onto them by plain deletion (repackMove). Empty nodes would go anyway; bundled, their
// price pays for the flexibility the fresh claims need. Each such action
// obeys the consolidation rules (savings of MinSavingsShare of its
// candidates' price whichever options launch, never a candidate's own
// offering or its type unless cheaper, nothing in the insufficient-capacity
// view, the pool's minValues, the budget; the spot flexibility floor when
// it replaces one node, as Karpenter applies it) and never launches more
// nodes than it removes.
//
// After a scale-down the last pods leave the loaded nodes after the empty
// ones are past consolidateAfter; emptiness would spend the budget and the
// price that pay for the repack, so those empty nodes wait for the loaded
// ones (holdForRepack, at most repackHold).
//
// Replacements younger than replacementSettle are no consolidation
// candidates at all (SkipRecentReplacement): a repack that counted them
// as removable would aim at a fresh plan without them and launch their
// like again, and plain deletion would move their pods back onto the
// burst's nodes the repack is removing — launch and remove within minutes.

// replacementSettle is how long a replacement is no consolidation
// candidate: the churn window (no node launched and removed within
// ten minutes).
const replacementSettle = 10 * time.Minute

// repack runs the repack step for each pool, in name order. A pool with
// drifted or expired nodes waits: those go first.
func (w *working) repack(eligible []*nodeInfo, out *Plan) error {
	byPool := map[string][]*nodeInfo{}
	held := map[string]bool{}
	settling := map[string][]*nodeInfo{}
	var pools []string
	for _, n := range eligible {
		p := n.poolName()
		if _, seen := byPool[p]; !seen {
			pools = append(pools, p)
			byPool[p] = nil
		}
		if _, _, drifted := Drifted(n.claim, n.pool, w.in.NodeClasses[nodeClassName(n.claim)]); drifted {
			held[p] = true
		}
		if at, ok := expiry(n); ok && w.due(at) {
			held[p] = true
		}
		if at, ok := w.repackableAt(n); ok {
			if w.due(at) {
				byPool[p] = append(byPool[p], n)
			} else if !lifecycle.IsEmpty(n.pods) {
				settling[p] = append(settling[p], n)
			}
		}
	}
	sort.Strings(pools)
	for _, p := range pools {
		if held[p] || len(byPool[p]) == 0 {
			continue
		}
		if w.solves >= w.opts.MaxSolves {
			return nil
		}
		var loaded, empty []*nodeInfo
		for _, n := range byPool[p] {
			if lifecycle.IsEmpty(n.pods) {
				empty = append(empty, n)
			} else {
				loaded = append(loaded, n)
			}
		}
		if len(loaded)+len(settling[p]) == 0 {
			continue
		}
		// The target is the fresh plan for every candidate's pods, also
		// those of nodes still within consolidateAfter: they come later.
		all := append(append(append([]*nodeInfo(nil), loaded...), settling[p]...), empty...)
		scratch, keep, err := w.wantsRepack(p, all)
		if err != nil {
			return err
		}
		if scratch == nil {
			continue
		}
		sortByPodsPerDollar(loaded)
		if len(loaded) > 0 {
			a, plan, err := w.repackPool(p, append(loaded, empty...), all, scratch, keep)
			if err != nil {
				return err
			}
			if a != nil {
				w.commit(a, plan)
				out.Actions = append(out.Actions, a)
				continue
			}
		}
		if len(settling[p]) > 0 {
			w.holdForRepack(p, empty, scratch, keep)
		}
	}
	return nil
}

// youngReplacement reports whether n was launched by a disruption less
// than replacementSettle ago.
func (w *working) youngReplacement(n *nodeInfo) bool {
	if n.claim.Annotations[nsv1.AnnotationReplacementFor] == "" {
		return false
	}
	return !w.due(n.claim.CreationTimestamp.Add(replacementSettle))
}

// repackHold is the longest an empty node waits for a repack of its pool.
const repackHold = time.Minute

// holdForRepack keeps the pool's empty nodes from emptiness for a while
// when nodes with pods are still within consolidateAfter and a repack is
// wanted: after a scale-down the last pods leave the loaded nodes after
// the empty ones are past consolidateAfter, and emptiness would spend the
// budget and the empty nodes' price that pay for the repack (the lab's
// fleet ended on one c6g.16xlarge that way). An empty node is held only
// within repackHold of becoming removable, and only while the budget
// allows the two or more nodes a repack takes.
func (w *working) holdForRepack(pool string, empty []*nodeInfo, scratch *scheduling.Plan, keep float64) {
	if w.budgets.allowed(pool, nsv1.DisruptionReasonUnderutilized) < 2 {
		return // a repack of one node is no repack (repackPool); emptiness goes on
	}
	for _, n := range empty {
		at, _ := lifecycle.EmptySince(n.claim, n.pool)
		if w.due(at.Add(repackHold)) {
			continue
		}
		w.heldForRepack[n.name] = fmt.Sprintf("node %s is empty and held until %s for a repack of nodepool %s: its nodes with pods are still within consolidateAfter, and deleting alone would leave $%.4f/h where a fresh plan costs $%.4f/h",
			n.name, at.Add(repackHold).UTC().Format(time.RFC3339), pool, keep, scratch.Cost())
	}
}

// repackableAt reports whether consolidation may take n apart from
// consolidateAfter (the filters of consolidation, without recording skips:
// the later steps record them), and when consolidateAfter lets it.
func (w *working) repackableAt(n *nodeInfo) (time.Time, bool) {
	if n.removed || n.received || w.youngReplacement(n) ||
		n.pool.Spec.Disruption.ConsolidationPolicy == nsv1.ConsolidationPolicyWhenEmpty {
		return time.Time{}, false
	}
	return lifecycle.EmptySince(n.claim, n.pool)
}

// wantsRepack solves cands' pods from scratch when deleting alone would
// not get within MinSavingsShare of a fresh plan (deletionFloor, and a
// lower bound on the fresh plan first, to spare the solve); it returns
// that plan when it is cheap enough, and the deletion estimate.
func (w *working) wantsRepack(pool string, cands []*nodeInfo) (*scheduling.Plan, float64, error) {
	in := map[string]bool{}
	for _, n := range cands {
		in[n.name] = true
	}
	keep, _ := w.deletionFloor(pool, cands, in)
	maxScratch := keep * (1 - w.opts.MinSavingsShare)
	if keep == 0 || w.leastCostFor(w.needBeyondSpare(pool, cands, in)) > maxScratch {
		return nil, keep, nil // deleting gets as far, or no fresh plan could beat it
	}
	scratch, err := w.simulate(cands)
	if err != nil {
		return nil, keep, err
	}
	// A fresh plan of one node is what plain consolidation reaches (one
	// replacement at most): the repack is for the plans it cannot.
	if len(scratch.Unschedulable) > 0 || len(scratch.NewClaims) < 2 || scratch.Cost() > maxScratch {
		return nil, keep, nil
	}
	return scratch, keep, nil
}

// repackPool builds the repack of the candidates that may go now (in the
// order they are to go; all are every candidate of the pool) toward
// scratch, the fresh plan for every candidate's pods, or nil when the
// budget, the savings rule or the pool's limits do not let it.
func (w *working) repackPool(pool string, movable, all []*nodeInfo, scratch *scheduling.Plan, keep float64) (*Action, *scheduling.Plan, error) {
	allowed := min(w.budgets.allowed(pool, nsv1.DisruptionReasonUnderutilized), w.opts.MaxCandidatesPerCommand)
	if allowed == 0 {
		return nil, nil, nil
	}
	s, part, err := w.repackMove(movable, all, allowed, scratch)
	if err != nil || part == nil {
		return nil, nil, err
	}
	price := 0.0
	for _, n := range s {
		price += n.price
	}
	total := len(all)
	if len(s) == 1 && len(part.NewClaims) == 1 {
		// One node for one: single-node consolidation's move, which
		// leaves the budget to emptiness first.
		return nil, nil, nil
	}
	m := MethodMultiNodeConsolidation
	if len(s) == 1 {
		m = MethodSingleNodeConsolidation
	}
	a := w.newAction(m, nsv1.DisruptionReasonUnderutilized, s, "underutilized")
	why := fmt.Sprintf("the pool's %d candidates are the wrong shape for their %d pods: keeping the fewest that hold them costs $%.4f/h, a fresh plan $%.4f/h",
		total, scratch.PodCount(), keep, scratch.Cost())
	who := describeAll(s)
	if len(part.NewClaims) == 0 {
		a.Savings = price
		a.Message = fmt.Sprintf("%s: %s; their pods fit on other nodes, deleting saves $%.4f/h", who, why, price)
		return a, part, nil
	}
	// The spot flexibility floor guards a node's replacement by a cheaper
	// spot node against walking down the spot price ladder; like Karpenter
	// (designs/spot-consolidation.md), a consolidation of several nodes
	// does not need it, and the fresh plan's claims, once the candidates'
	// own types are left out, often keep fewer than 15 (the lab's 48-vCPU
	// claim kept 12). The pool's minValues still hold.
	minSpot := 1
	if len(s) == 1 {
		minSpot = w.opts.MinSpotOptions
	}
	repl, _, _ := w.narrowAll(part.NewClaims, s, price*(1-w.opts.MinSavingsShare), minSpot)
	if repl == nil {
		return nil, nil, nil
	}
	// The fresh plan fits the limits once every candidate is gone; these
	// claims must fit once the ones removed now are.
	if w.limitRefusal(s, repl) != "" {
		return nil, nil, nil
	}
	for _, cp := range repl {
		a.Replacements = append(a.Replacements, w.rename(cp))
	}
	part.NewClaims = a.Replacements
	a.Savings = price - a.ReplacementPrice()
	a.Message = fmt.Sprintf("%s: %s; launching %d nodes of that plan (from $%.4f/h) for their %d pods saves $%.4f/h",
		who, why, len(repl), a.ReplacementPrice(), len(a.Pods), a.Savings)
	return a, part, nil
}

// repackMove picks the candidates a repack removes now (at most allowed,
// from movable in order; all are every candidate of the pool) and where
// their pods go. When the first allowed's pods fit on the nodes that stay
// (no candidate), they go there and nothing is launched: no claim is
// launched ahead of pods that would then go elsewhere. Else the pods go
// to the fresh plan's claims they land on, sized for every pod the plan
// gives them, the rest coming with later rounds, from repackSet's nodes.
// Without the first step the shrinking fleet under limits (seed 7) ended
// 28 % over a fresh plan: each round launched claims for a few pods, and
// later rounds placed the rest elsewhere. nil when no repack may be made.
func (w *working) repackMove(movable, all []*nodeInfo, allowed int, scratch *scheduling.Plan) ([]*nodeInfo, *scheduling.Plan, error) {
	s := movable[:min(allowed, len(movable))]
	own, err := w.simulateOnto(s, all)
	if err != nil {
		return nil, nil, err
	}
	if len(own.Unschedulable) == 0 && len(own.NewClaims) == 0 {
		return s, own, nil
	}
	if s = repackSet(movable, allowed, scratch); len(s) == 0 {
		return nil, nil, nil
	}
	return s, scratchPart(scratch, s), nil
}

// scratchPart is the part of the fresh plan that moves s's pods: their
// nominations, and the claims they land on, each sized (options,
// requests) for all the pods the plan gives it.
func scratchPart(scratch *scheduling.Plan, s []*nodeInfo) *scheduling.Plan {
	moved := map[*corev1.Pod]bool{}
	for _, n := range s {
		for _, p := range n.movable {
			moved[p] = true
		}
	}
	part := &scheduling.Plan{}
	for _, nom := range scratch.Nominations {
		if moved[nom.Pod] {
			part.Nominations = append(part.Nominations, nom)
		}
	}
	for _, cp := range scratch.NewClaims {
		var pods []*corev1.Pod
		for _, p := range cp.Pods {
			if moved[p] {
				pods = append(pods, p)
			}
		}
		if len(pods) == 0 {
			continue
		}
		trimmed := *cp
		trimmed.Pods = pods
		part.NewClaims = append(part.NewClaims, &trimmed)
	}
	return part
}

// repackSet is the longest prefix of movable, at most allowed long, whose
// pods land on no more of the fresh plan's claims than it has nodes (a
// repack launches no more nodes than it removes). Taking the first
// allowed nodes whatever their pods need, the mixed fleet shrunk under
// binding limits (seed 3) had every round's repack refused for a claim
// too many, and plain deletion settled on the burst's large nodes, 17 %
// over a fresh plan; a shorter prefix makes the repack's progress.
func repackSet(movable []*nodeInfo, allowed int, scratch *scheduling.Plan) []*nodeInfo {
	claimOf := map[*corev1.Pod]int{}
	for i, cp := range scratch.NewClaims {
		for _, p := range cp.Pods {
			claimOf[p] = i
		}
	}
	opened := map[int]bool{}
	best := 0
	for k, n := range movable[:min(allowed, len(movable))] {
		for _, p := range n.movable {
			if i, ok := claimOf[p]; ok {
				opened[i] = true
			}
		}
		if len(opened) <= k+1 {
			best = k + 1
		}
	}
	return movable[:best]
}

func (w *working) podsOf(ns []*nodeInfo) []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range ns {
		out = append(out, n.movable...)
	}
	return out
}

// poolSpare is the spare room of the pool's nodes that are not in cands
// and that pods may go to.
func (w *working) poolSpare(pool string, in map[string]bool) resvec {
	var free resvec
	for _, n := range w.nodes {
		if n.poolName() != pool || in[n.name] || n.removed || n.disrupting {
			continue
		}
		if en, ok := w.base[n.name]; ok && !en.MarkedForDeletion && !en.InFlight {
			free.add(w.spare(en))
		}
	}
	return free
}

// needBeyondSpare is what the candidates' pods ask for beyond the spare
// room of the pool's other nodes, never negative.
func (w *working) needBeyondSpare(pool string, cands []*nodeInfo, in map[string]bool) resvec {
	need := w.need(w.podsOf(cands))
	free := w.poolSpare(pool, in)
	for d := range need {
		need[d] = max(0, need[d]-free[d])
	}
	return need
}

// deletionFloor estimates where deleting alone would leave cands: drop
// candidates while the room of those left plus the spare room of the
// pool's other nodes still holds every candidate's pods in aggregate (no
// bin packing), and sum the prices of those left. Two orders, and the
// dearer result: plain consolidation's own (fewest pods per dollar first,
// so it keeps the nodes with the most pods per dollar: the lab's fleet held
// a c6g.12xlarge and a c6g.2xlarge, $0.51/h together, yet deletion ended on
// a c6g.16xlarge, $0.56/h), and dearest per unit of room first (the 1,500-
// to-150 scale-down, seed 42, strands a replacement that way). It also
// returns how many nodes that leaves.
func (w *working) deletionFloor(pool string, cands []*nodeInfo, in map[string]bool) (float64, int) {
	need := w.needBeyondSpare(pool, cands, in)
	if need.isZero() {
		return 0, 0
	}
	caps := map[string]resvec{}
	perRoom := map[string]float64{}
	for _, n := range cands {
		var c resvec
		if en := w.base[n.name]; en != nil {
			c = w.spare(en)
			c.add(w.need(n.movable))
		}
		caps[n.name] = c
		units := 0.0
		for d := range c {
			if need[d] > 0 {
				units += float64(c[d]) / float64(need[d])
			}
		}
		perRoom[n.name] = n.price / max(units, 1e-9)
	}
	keep := func(order []*nodeInfo) (float64, int) {
		var total resvec
		for _, n := range order {
			total.add(caps[n.name])
		}
		kept, count := 0.0, 0
		for _, n := range order {
			var without resvec
			for d := range total {
				without[d] = total[d] - caps[n.name][d]
			}
			if need.fits(without) {
				total = without
				continue
			}
			kept += n.price
			count++
		}
		return kept, count
	}
	byPods := append([]*nodeInfo(nil), cands...)
	sortByPodsPerDollar(byPods)
	byRoom := append([]*nodeInfo(nil), cands...)
	sort.SliceStable(byRoom, func(i, j int) bool { return perRoom[byRoom[i].name] > perRoom[byRoom[j].name] })
	p1, n1 := keep(byPods)
	p2, n2 := keep(byRoom)
	if p2 > p1 {
		return p2, n2
	}
	return p1, n1
}
