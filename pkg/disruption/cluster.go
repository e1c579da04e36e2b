package disruption

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cost"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// nodeInfo is one registered node (with its claim when Nodesmith launched it)
// in the plan's working copy of the cluster.
type nodeInfo struct {
	name  string
	claim *nsv1.NodeClaim // nil for nodes Nodesmith does not manage
	node  *corev1.Node
	pool  *nsv1.NodePool // nil when the claim's pool is gone
	// pods are every pod bound to the node; movable those that must move.
	pods    []*corev1.Pod
	movable []*corev1.Pod
	// stuck says why a movable pod could go nowhere: its volumes are not
	// ready (provisioning.VolumeRequirements); empty when none.
	stuck string
	price float64
	it    string
	zone  string
	ct    string
	// disrupting: being deleted, or part of a command in progress.
	disrupting bool
	// counted: the budget ledger already counts the node as disrupting
	// (budget.Disrupting), so an action on it takes no more budget.
	counted bool
	// notReady: the ledger counts the initialized node as disrupting
	// because its Ready condition is False or Unknown (budget.NotReady);
	// it is still a candidate, but an action on it takes no more budget.
	notReady bool
	// awaiting: marked by the interruption handler and in no command yet:
	// the interruption step (interrupt.go) plans its command.
	awaiting bool
	// marked Disrupting (by the interruption handler): its drain is that
	// handler's decision, so consolidation does not take it; drift and
	// expiry still may.
	marked bool
	// removed by an action of this plan.
	removed bool
	// received pods from an action of this plan (they are in pods and
	// movable now): later actions of the plan may delete it, moving those
	// pods on, but not replace it or wait for anything, which would chain
	// a command onto moves the cluster has not made yet.
	received bool
	// prepaid: the node costs nothing more to run (launched into a
	// capacity reservation, or on-demand a commitment wholly covers), so
	// consolidating it saves nothing. A node whose price is merely
	// unknown (0) is not prepaid.
	prepaid bool
}

func (n *nodeInfo) poolName() string {
	if n.claim == nil {
		return ""
	}
	return n.claim.Labels[nsv1.LabelNodePool]
}

// working is the plan's copy of the cluster: the solver's view of every
// node (updated as actions move pods), the pools, budgets and skips.
type working struct {
	in   Input
	opts Options

	nodes  []*nodeInfo // registered nodes of claims, sorted by claim name
	byNode map[string]*nodeInfo
	// base are the solver's existing nodes by name; actions replace entries
	// with copies carrying the pods moved onto them.
	base      map[string]*scheduling.ExistingNode
	baseOrder []string
	// added are the replacements of this plan's actions, as in-flight nodes.
	added []*scheduling.ExistingNode
	// extra are nodes one simulation may fill besides the cluster's: a
	// static node's replacement while its pods are placed (static.go).
	extra      []*scheduling.ExistingNode
	pools      []*scheduling.NodePool
	poolByName map[string]*scheduling.NodePool
	poolObjs   map[string]*nsv1.NodePool
	// nominatedTargets are nodes and claims pending pods are nominated to.
	nominatedTargets map[string]bool
	// commands maps a command in progress to whether any of its
	// candidates still exists.
	commands map[string]bool
	// held are the commands that hold their candidates (prespin): their
	// replacements keep the room for the candidates' pods, so no other
	// action moves pods onto them.
	heldCommands map[string]bool
	budgets      *tracker
	skips        map[string]Skip
	solves       int
	// compact: hand the solver nodes as their remaining room (compact.go);
	// compactCache holds those views until an action changes the node.
	compact      bool
	compactCache map[string]*scheduling.ExistingNode
	// replacements numbers the plan's replacement claims.
	replacements int
	requests     map[types.UID]podRequest
	// unitPrices are the lowest $/h per unit of cpu, memory and pod slots
	// the pools sell (leastCostFor), computed on first use.
	unitPrices *[3]float64
	// heldForRepack are empty nodes emptiness leaves for a repack, with why.
	heldForRepack map[string]string
	// typesByPool are the pools' instance types with the
	// insufficient-capacity view applied; held the pending pods the
	// provisioner holds on nodes and claims (both for the fingerprint).
	typesByPool map[string][]*catalog.InstanceType
	held        map[string][]*corev1.Pod
	// typeHashes are the fixed parts' hashes of the instance types, kept
	// with the plan for the next fingerprint (reuse.go).
	typeHashes map[typeIdentity]uint64
	// horizon is the first instant after Now at which a time comparison
	// of the plan turns out differently (reuse.go); zero when none.
	horizon time.Time
}

func newWorking(in Input) *working {
	w := begin(in)
	w.build()
	return w
}

// begin is the part of the working copy a plan's fingerprint reads: the
// nominations and held pods, the pools' instance types as the plan sees
// them, the pools and the budgets. build adds the rest.
func begin(in Input) *working {
	snap := in.Snapshot
	w := &working{
		in: in, opts: in.Options.withDefaults(),
		byNode: map[string]*nodeInfo{}, base: map[string]*scheduling.ExistingNode{},
		poolObjs: map[string]*nsv1.NodePool{},
		commands: map[string]bool{}, heldCommands: map[string]bool{}, skips: map[string]Skip{}, requests: map[types.UID]podRequest{},
		compactCache:  map[string]*scheduling.ExistingNode{},
		heldForRepack: map[string]string{},
	}
	nominated := in.Nominated
	if nominated == nil {
		nominated = func(types.UID) (string, time.Time, bool) { return "", time.Time{}, false }
	}
	pending := provisioning.PendingPods(snap, nominated, in.Now)
	// Nodes and claims pods are nominated to are no candidates, also a
	// replacement prespun for pods still running on a disrupted node.
	w.nominatedTargets = provisioning.NominatedTargets(snap, nominated)
	typesByPool := map[string][]*catalog.InstanceType{}
	for name, its := range in.InstanceTypes {
		typesByPool[name] = withUnavailable(its, in.Unavailable)
	}
	w.typesByPool, w.held = typesByPool, pending.Held
	for _, np := range snap.NodePools {
		if np.DeletionTimestamp.IsZero() {
			w.poolObjs[np.Name] = np
		}
	}
	for _, c := range snap.NodeClaims {
		if cmd := c.Annotations[nsv1.AnnotationDisruptionCommand]; cmd != "" {
			w.commands[cmd] = true
			if c.Annotations[nsv1.AnnotationDisruptionHold] == "true" && c.DeletionTimestamp.IsZero() {
				w.heldCommands[cmd] = true
			}
		}
	}
	w.budgets = newTracker(snap, w.poolObjs, in.Disrupting, in.Now)
	for _, np := range w.poolObjs {
		for _, b := range np.Spec.Disruption.Budgets {
			if at, ok := budget.NextChange(b, in.Now); ok {
				w.until(at)
			}
		}
	}
	return w
}

// build adds the solver's view of the cluster and the nodes to w.
func (w *working) build() {
	in, snap := w.in, w.in.Snapshot
	w.compact = topologyFree(snap.Pods)
	solveIn, _ := provisioning.BuildInput(snap, provisioning.Pending{Held: w.held}, w.typesByPool, w.opts.Solve)
	w.pools = solveIn.NodePools
	if w.compact {
		prefilterTypes(w.pools)
	}
	w.poolByName = map[string]*scheduling.NodePool{}
	for _, p := range w.pools {
		w.poolByName[p.Name] = p
	}
	replacing := map[string]bool{}
	for _, c := range snap.NodeClaims {
		if w.heldCommands[c.Annotations[nsv1.AnnotationReplacementFor]] {
			replacing[c.Name] = true
			if c.Status.NodeName != "" {
				replacing[c.Status.NodeName] = true
			}
		}
	}
	for _, en := range solveIn.Nodes {
		if en.InFlight || replacing[en.Name] {
			// Room on a node that has not initialized (or on this plan's
			// replacements) is not counted on: it may never come. Room on
			// a held command's replacement is its candidates'.
			cp := *en
			cp.MarkedForDeletion = true
			en = &cp
		}
		w.base[en.Name] = en
		w.baseOrder = append(w.baseOrder, en.Name)
	}
	for _, n := range snap.Nodes {
		claim := snap.ClaimByNode[n.Name]
		if claim == nil {
			continue
		}
		ni := &nodeInfo{name: n.Name, claim: claim, node: n, pool: w.poolObjs[claim.Labels[nsv1.LabelNodePool]], pods: snap.PodsByNode[n.Name]}
		ni.counted = budget.Disrupting(claim, in.Disrupting)
		ni.notReady = lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionInitialized) && budget.NotReady(n)
		inCommand := claim.Annotations[nsv1.AnnotationDisruptionCommand] != ""
		held := inCommand && claim.Annotations[nsv1.AnnotationDisruptionHold] == "true"
		// A candidate of a command in progress is no candidate again,
		// except one a prespin command holds (which does not use up the
		// budget while it waits, maybe for hours, for an interruption that
		// may never come): drift and expiry still replace it, as they
		// would any node; consolidation leaves it, as every marked node.
		ni.disrupting = ni.counted || (inCommand && !held)
		ni.marked = provisioning.Disrupted(claim)
		ni.awaiting = interruption.MarkOf(claim).Marked() && claim.DeletionTimestamp.IsZero() && !inCommand &&
			(in.Disrupting == nil || !in.Disrupting(claim.Name))
		for _, p := range ni.pods {
			if !mustMove(p) {
				continue
			}
			// A moved pod keeps its volumes: it may only go where they
			// are, by the rule the provisioner plans pending pods with.
			vt, err := provisioning.VolumeRequirements(snap.Storage, p)
			if err != nil && ni.stuck == "" {
				ni.stuck = fmt.Sprintf("pod %s/%s could not be placed elsewhere: %v", p.Namespace, p.Name, err)
			}
			ni.movable = append(ni.movable, provisioning.WithVolumeTopology(p, vt))
		}
		sortPods(ni.movable)
		ni.it, ni.zone, ni.ct = cost.OfferingOf(claim)
		ni.prepaid = ni.ct == nsv1.CapacityTypeReserved
		w.nodes = append(w.nodes, ni)
		w.byNode[n.Name] = ni
	}
	sort.Slice(w.nodes, func(i, j int) bool { return w.nodes[i].claim.Name < w.nodes[j].claim.Name })
	w.priceNodes(solveIn.Commitments)
	w.placeBuffers()
}

// mustMove reports whether disrupting the pod's node moves the pod: DaemonSet
// and static pods go with the node, finished and terminating pods are gone.
func mustMove(p *corev1.Pod) bool {
	return !lifecycle.IsDaemonSetPod(p) && !lifecycle.IsOwnedByNode(p) && !lifecycle.IsTerminal(p) && p.DeletionTimestamp == nil
}

func sortPods(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}

// priceNodes prices every node as the cost metrics do (cost.Prices): its
// offering in its pool's instance types (overlays applied, spot prices
// moving), else its launch price; a covered on-demand node at what the
// commitments (Savings Plans, RIs) leave uncovered, charged in claim name
// order: a covered node is prepaid, so replacing it with spot saves
// nothing, as deleting it frees only a commitment the account pays anyway.
func (w *working) priceNodes(cs []catalog.Commitment) {
	claims := make([]*nsv1.NodeClaim, len(w.nodes))
	for i, n := range w.nodes {
		claims[i] = n.claim
	}
	for i, p := range cost.Prices(claims, cost.PoolTypes(w.in.InstanceTypes), cs) {
		w.nodes[i].price = p.PerHour // zero when unpriced
		if p.Covered > 0 && p.PerHour <= 0 {
			w.nodes[i].prepaid = true // wholly covered by commitments
		}
	}
}

// withUnavailable returns copies of types whose offerings in the
// insufficient-capacity view are marked unavailable.
func withUnavailable(its []*catalog.InstanceType, unavailable func(string, string, string) bool) []*catalog.InstanceType {
	if unavailable == nil {
		return its
	}
	out := make([]*catalog.InstanceType, len(its))
	for i, it := range its {
		offs := make(catalog.Offerings, len(it.Offerings))
		for j, o := range it.Offerings {
			o.Available = o.Available && !unavailable(it.Name, o.Zone, o.CapacityType)
			offs[j] = o
		}
		out[i] = it.WithOfferings(offs)
	}
	return out
}

// skip records why a node was left; the first reason recorded stands.
func (w *working) skip(n *nodeInfo, reason SkipReason, msg string) {
	if _, ok := w.skips[n.claim.Name]; ok {
		return
	}
	w.skips[n.claim.Name] = Skip{Claim: n.claim.Name, Node: n.name, NodePool: n.poolName(), Reason: reason, Message: msg}
}

// commit applies an action to the working copy: its candidates leave, the
// pods it moves take room on their new nodes, its replacements join as
// in-flight nodes (counted for topology, not offered to later actions).
func (w *working) commit(a *Action, plan *scheduling.Plan) {
	for _, c := range a.Candidates {
		n := w.byNode[c.Node.Name]
		n.removed = true
		delete(w.skips, n.claim.Name)
		// A node the ledger already counts (an interruption's mark, a
		// Ready condition that is not True) is not taken twice; a held
		// command takes nothing until it deletes.
		if !n.counted && !n.notReady && !a.Hold {
			w.budgets.take(n.poolName())
		}
		delete(w.base, n.name)
	}
	if plan != nil {
		for _, nom := range plan.Nominations {
			w.takeRoom(nom.Node, nom.Pod, true)
		}
	}
	for _, r := range a.Replacements {
		w.added = append(w.added, &scheduling.ExistingNode{
			Name: r.Name, Labels: claimPlanLabels(r), Taints: r.Taints, Allocatable: r.Requests,
			Pods: r.Pods, InFlight: true, MarkedForDeletion: true,
		})
		if p := w.poolByName[r.NodePool]; p != nil {
			chargeUsage(p, w.opts.Solve.PlannedCharge(r.Options))
		}
	}
}

// claimPlanLabels are the labels a planned claim's node will carry.
func claimPlanLabels(cp *scheduling.ClaimPlan) map[string]string { return provisioning.PlanLabels(cp) }

// chargeUsage adds a replacement charged charge (scheduling's
// PlannedCharge, as provisioning.Usage counts an in-flight claim) to its
// pool's usage, and one node.
func chargeUsage(p *scheduling.NodePool, charge corev1.ResourceList) {
	usage := p.Usage.DeepCopy()
	if usage == nil {
		usage = corev1.ResourceList{}
	}
	for name, q := range charge {
		cur := usage[name]
		cur.Add(q)
		usage[name] = cur
	}
	nodes := usage[nsv1.ResourceNodes]
	nodes.Add(*resource.NewQuantity(1, resource.DecimalSI))
	usage[nsv1.ResourceNodes] = nodes
	p.Usage = usage
}

// poolsWithout is the solver's view of the pools once cands are gone:
// each limited pool's usage less what provisioning.Usage counts for the
// candidates' claims, and less their number. A consolidation's or drift's
// replacement takes its candidates' place, so it is judged against the
// room their removal leaves; a pool that still counted them refused every
// replacement under a binding limit, and a shrunk fleet stayed on the
// burst's nodes (up to 19 % over a fresh plan). Earlier actions of the plan
// keep counting their candidates (commit only charges their
// replacements): the controller may carry out a later action without
// them, so no action may rely on another's removals. Candidates are never
// being deleted (those are disrupting), so the pool counts each of them.
func (w *working) poolsWithout(cands []*nodeInfo) []*scheduling.NodePool {
	byPool := map[string][]*nsv1.NodeClaim{}
	for _, n := range cands {
		if p := w.poolByName[n.poolName()]; p != nil && len(p.Limits) > 0 {
			byPool[p.Name] = append(byPool[p.Name], n.claim)
		}
	}
	if len(byPool) == 0 {
		return w.pools
	}
	out := make([]*scheduling.NodePool, len(w.pools))
	for i, p := range w.pools {
		claims := byPool[p.Name]
		if len(claims) == 0 {
			out[i] = p
			continue
		}
		gone, count := provisioning.Usage(claims, w.typesByPool[p.Name])
		gone[nsv1.ResourceNodes] = *resource.NewQuantity(count, resource.DecimalSI)
		usage := p.Usage.DeepCopy()
		for name, q := range gone {
			cur := usage[name]
			cur.Sub(q)
			usage[name] = cur
		}
		cp := *p
		cp.Usage = usage
		out[i] = &cp
	}
	return out
}

// limitRefusal says why the pools' limits refuse launching repl in place
// of cands (scheduling.LimitRefusal, the solver's rule): each replacement
// in turn, charged as chargeUsage charges it, against its pool's usage
// without cands (poolsWithout) and with the replacements before it; ""
// when they fit.
func (w *working) limitRefusal(cands []*nodeInfo, repl []*scheduling.ClaimPlan) string {
	pools := map[string]*scheduling.NodePool{}
	for _, p := range w.poolsWithout(cands) {
		pools[p.Name] = p
	}
	for i, cp := range repl {
		p := pools[cp.NodePool]
		if p == nil {
			continue
		}
		charge := w.opts.Solve.PlannedCharge(cp.Options)
		if msg := scheduling.LimitRefusal(p, charge, fmt.Sprintf("new node %d of %d", i+1, len(repl))); msg != "" {
			return msg
		}
		charged := *p
		chargeUsage(&charged, charge)
		pools[p.Name] = &charged
	}
	return ""
}

// existing is the solver's view of every node but the removed ones and
// those in skip, in a stable order.
func (w *working) existing(skip map[string]bool) []*scheduling.ExistingNode {
	out := make([]*scheduling.ExistingNode, 0, len(w.base)+len(w.added))
	for _, name := range w.baseOrder {
		if _, ok := w.base[name]; !ok || skip[name] {
			continue
		}
		out = append(out, w.solverNode(name))
	}
	out = append(out, w.added...)
	return append(out, w.extra...)
}
