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
// take part): estimate the cheapest fleet that deleting alone could leave
// (the fewest candidates, dearest per unit of room dropped first, whose
// room with the spare room of the pool's other nodes holds every
// candidate's pods: aggregate room, so an underestimate, which keeps this
// step rare), then solve the candidates' pods from scratch (one solve).
// Only when the from-scratch plan saves at least MinSavingsShare against
// that estimate, remove as many candidates as the budget allows — the
// nodes that run pods first, fewest pods per dollar first, then empty
// ones — and launch the from-scratch claims their pods land on, sized for
// every candidate's pods, so the next rounds move the rest of the pods
// onto them by plain deletion. Empty nodes would go anyway; bundled, their
// price pays for the flexibility the fresh claims need. Each such action
// obeys every consolidation rule (savings of MinSavingsShare of its
// candidates' price whichever options launch, never a candidate's own
// offering, nothing in the insufficient-capacity view, the spot
// flexibility floor, the budget) and never launches more nodes than it
// removes.
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
		if at, ok := expiry(n); ok && !at.After(w.in.Now) {
			held[p] = true
		}
		if w.repackable(n) {
			byPool[p] = append(byPool[p], n)
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
		if len(loaded) == 0 {
			continue
		}
		sortByPodsPerDollar(loaded)
		a, plan, err := w.repackPool(p, append(loaded, empty...))
		if err != nil {
			return err
		}
		if a != nil {
			w.commit(a, plan)
			out.Actions = append(out.Actions, a)
		}
	}
	return nil
}

// repackable reports whether consolidation may take n now (the filters of
// consolidation, without recording skips: the later steps record them).
func (w *working) repackable(n *nodeInfo) bool {
	if n.removed || n.received || w.youngReplacement(n) ||
		n.pool.Spec.Disruption.ConsolidationPolicy == nsv1.ConsolidationPolicyWhenEmpty {
		return false
	}
	at, ok := lifecycle.EmptySince(n.claim, n.pool)
	return ok && !at.After(w.in.Now)
}

// youngReplacement reports whether n was launched by a disruption less
// than replacementSettle ago.
func (w *working) youngReplacement(n *nodeInfo) bool {
	if n.claim.Annotations[nsv1.AnnotationReplacementFor] == "" {
		return false
	}
	return w.in.Now.Sub(n.claim.CreationTimestamp.Time) < replacementSettle
}

// repackPool decides the repack of one pool's candidates (in the order
// they are to go), or nil when the plain steps should have their turn.
func (w *working) repackPool(pool string, movable []*nodeInfo) (*Action, *scheduling.Plan, error) {
	in := map[string]bool{}
	for _, n := range movable {
		in[n.name] = true
	}
	allowed := min(w.budgets.allowed(pool, nsv1.DisruptionReasonUnderutilized), w.opts.MaxCandidatesPerCommand)
	if allowed == 0 {
		return nil, nil, nil
	}
	keep := w.deletionFloor(pool, movable, in)
	maxScratch := keep * (1 - w.opts.MinSavingsShare)
	if keep == 0 || w.leastCostFor(w.needBeyondSpare(pool, movable, in)) > maxScratch {
		return nil, nil, nil // deleting gets as far, or no fresh plan could beat it
	}
	scratch, err := w.simulate(movable)
	if err != nil {
		return nil, nil, err
	}
	if len(scratch.Unschedulable) > 0 || len(scratch.NewClaims) == 0 || scratch.Cost() > maxScratch {
		return nil, nil, nil
	}
	// Remove what the budget allows; launch the fresh plan's claims that
	// their pods land on.
	s := movable[:min(allowed, len(movable))]
	moved := map[*corev1.Pod]bool{}
	price := 0.0
	for _, n := range s {
		price += n.price
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
		// Sized (options, requests) for all its pods: the rest come with
		// the next rounds' deletions.
		trimmed := *cp
		trimmed.Pods = pods
		part.NewClaims = append(part.NewClaims, &trimmed)
	}
	if len(part.NewClaims) > len(s) {
		return nil, nil, nil
	}
	m := MethodMultiNodeConsolidation
	if len(s) == 1 {
		m = MethodSingleNodeConsolidation
	}
	a := w.newAction(m, nsv1.DisruptionReasonUnderutilized, s, "underutilized")
	why := fmt.Sprintf("the pool's %d candidates are the wrong shape for their %d pods: keeping the fewest that hold them costs $%.4f/h, a fresh plan $%.4f/h",
		len(movable), len(w.podsOf(movable)), keep, scratch.Cost())
	who := describeAll(s)
	if len(part.NewClaims) == 0 {
		a.Savings = price
		a.Message = fmt.Sprintf("%s: %s; their pods fit on other nodes, deleting saves $%.4f/h", who, why, price)
		return a, part, nil
	}
	repl, _, _ := w.narrowAll(part.NewClaims, s, price*(1-w.opts.MinSavingsShare))
	if repl == nil {
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

// deletionFloor estimates the cheapest fleet deletions alone could leave
// of cands: drop candidates, dearest per unit of room first, while the room
// of those left plus the spare room of the pool's other nodes still holds
// every candidate's pods in aggregate (no bin packing, so an
// underestimate), and sum the prices of those left.
func (w *working) deletionFloor(pool string, cands []*nodeInfo, in map[string]bool) float64 {
	need := w.needBeyondSpare(pool, cands, in)
	if need.isZero() {
		return 0
	}
	type room struct {
		n   *nodeInfo
		cap resvec
		per float64 // price per unit of room, room measured against need
	}
	rooms := make([]room, 0, len(cands))
	var total resvec
	for _, n := range cands {
		en := w.base[n.name]
		if en == nil {
			continue
		}
		c := w.spare(en)
		c.add(w.need(n.movable))
		units := 0.0
		for d := range c {
			if need[d] > 0 {
				units += float64(c[d]) / float64(need[d])
			}
		}
		rooms = append(rooms, room{n: n, cap: c, per: n.price / max(units, 1e-9)})
		total.add(c)
	}
	sort.SliceStable(rooms, func(i, j int) bool { return rooms[i].per > rooms[j].per })
	kept := 0.0
	for _, r := range rooms {
		var without resvec
		for d := range total {
			without[d] = total[d] - r.cap[d]
		}
		if need.fits(without) {
			total = without
			continue
		}
		kept += r.n.price
	}
	return kept
}
