// Package scheduling is Nodesmith's solver: pending pods, existing nodes,
// NodePools, DaemonSets and the instance catalog in; a Plan out — pod →
// existing node nominations, new NodeClaims with their pods and a
// price-ordered list of launch options, and a reason for every pod that
// cannot be placed.
//
// It owns the requirements algebra (Requirement, Requirements: In, NotIn,
// Exists, DoesNotExist, Gt, Lt, Gte, Lte, minValues; Intersect, Compatible,
// Matches) that the controller, the AWS provider and the consolidator reuse,
// and the bin-packing solver (Solve). It must not import client-go clients,
// controller-runtime or the AWS SDK. Node affinity and taint/toleration
// matching against concrete nodes go through k8s.io/component-helpers.
//
// # Algorithm
//
//  1. Classes. Pods are grouped by a signature (namespace, labels, requests,
//     node selector, affinity, tolerations, spread, host ports). Every later
//     step works per class, so cost grows with distinct shapes, not pods.
//     Requests are int64 vectors (millicores, bytes, pods, ephemeral,
//     extended resources) converted once.
//  2. Relaxation ladder. Each class gets variants, strictest first: every
//     required OR-term of its node affinity, combined with its preferences
//     (preferred pod affinity, preferred anti-affinity, preferred node
//     affinity, ScheduleAnyway spreads) which are dropped one at a time. A
//     solve runs in rounds; pods not placed in round r retry with variant r+1.
//     When a pool has a PreferNoSchedule taint, every rung keeps the pod off
//     such pools it does not tolerate, and one more rung after the last
//     tolerates them (Karpenter's last relaxation); existing nodes are not
//     affected, as kube-scheduler only scores them lower. PreferencePolicy
//     Ignore starts at the last rung.
//  3. Pool fit. Per class variant and pool (pools in weight order, then
//     name): pool taints must be tolerated; zone and capacity-type
//     requirements narrow a 64-bit set of (zone, capacity type) slots;
//     instance-type labels filter types into a bitset; other keys must be
//     offered by the pool's labels or requirements; one pod must fit the
//     type's allocatable minus the DaemonSet overhead of that pool and type.
//     The first failing check becomes the explanation. Classes with the
//     same node requirements, tolerations and requests share one fit.
//  4. Topology (balance.go, topology.go, keys.go). Spread, affinity and
//     anti-affinity terms become groups counted per zone, per node/claim
//     or per value of another key; every pod a group's selector matches counts in it —
//     pending, planned, on existing nodes and in-flight claims — as
//     kube-scheduler counts it. kube-scheduler binds pods one at a time
//     in an order we do not control and ignores nominations, so a plan
//     must be valid in its final state, each pod judged as if bound last:
//     - zone groups some pending pod spreads over (required) are
//     balanced: every pod they count, whatever its own rules, gets a
//     zone quota that keeps the group within its smallest maxSkew over
//     the union of the spreading pods' domains (every zone where a node
//     matching their node affinity exists or could be launched, minDomains
//     honoured). Classes bound to few zones are planned first, the rest
//     water-fill the emptiest zones, classes following other pods (pod
//     affinity) last; a repair pass moves quotas of freely placed pods
//     from a group's fullest zone to its emptiest. A spreading pod may
//     then sit in any zone, and the emptiest zone has room for it;
//     - zone anti-affinity and the symmetric check forbid zones, at
//     planning and again at placement; zone self-affinity picks the
//     cheapest zone (the least planned among equals);
//     - a node or claim remembers the hostname spreads of the pods on it,
//     so no pod the selector matches can push one past its maxSkew (the
//     minimum over nodes is taken as 0); hostname anti-affinity is
//     checked both ways as pods are added;
//     - any other topology key (keys.go) — the capacity type, an
//     instance-type label (instance type, architecture, …), a label a
//     NodePool's template or requirements set — counts per value. Its
//     domains are the values the pools a pod may use can produce
//     (requirements ∩ offerings) plus those of existing nodes, filtered
//     by nodeAffinityPolicy and nodeTaintsPolicy (Honor and Ignore by
//     default, as in kube-scheduler); minDomains makes the minimum 0 when
//     there are fewer. Spreads water-fill per-value quotas like zone
//     spreads; anti-affinity forbids values holding a matching pod,
//     affinity keeps to values holding one. A claim takes a value when its
//     first pod the key concerns joins it: its slots narrow to one
//     capacity type, its types to those with its target type's label
//     value, or its requirements to one value of the pool's list. A pool
//     whose nodes would have no value (no such label, or a requirement
//     such as Exists that lists none) cannot take a pod whose required
//     spread or affinity needs the key, and says so;
//     - after packing, pods are taken back where the final state still
//     breaks a rule: the newest pod a balanced group counts in a zone
//     ahead of its emptiest by more than maxSkew, and pods whose
//     affinity targets were not placed; they are reported unschedulable.
//     Pods a zone rule counts go only to claims pinned to one zone.
//  5. Existing capacity first: registered nodes, then in-flight claims;
//     within each, a class's pods go to the node whose spare room has the
//     class's cpu:memory shape, tightest first (existing.go).
//  6. Packing new claims, per pool:
//     - seeds (pods that need a node of their own: hostname anti-affinity,
//     hostname spread, host ports) open one claim each, shared across seed
//     classes;
//     - those claims are topped up with other pods up to the cheapest type
//     that already holds them (no size increase: filling paid-for slack);
//     - the rest is first laid out by the packing LP (lpseed.go): the
//     configuration LP of PackingLowerBound over the pool's types and the
//     remaining pods says which pods belong together on which type; each
//     of its fills becomes as many claims of that type as the LP buys
//     nodes of it (rounded), filled through the same constraint checks and
//     then topped up. Real catalogs need this: burstable types sell two
//     vCPUs for a tenth of a cent, memory families sell GiB at a third of
//     the general-purpose price, small types run out of ENI pod slots, so
//     the cheapest plan puts each kind of pod on the type that sells what
//     it needs. The LP is skipped when it does not converge close to its
//     bound (near-proportional catalogs, where greedy is already tight) or
//     when there are more than 128 items;
//     - what is left goes to claims whose type is chosen by value
//     (target.go): each class nominates the types cheapest per pod for it
//     alone, each candidate is filled in simulation, and the type whose
//     fill holds the most worth (pods × their class's best per-pod price)
//     per dollar wins, so a small tail picks a small type and complementary
//     pods share one; chooseTarget (price × nodes the remaining demand
//     needs) is the fallback. Claims are filled by the dot-product
//     heuristic: the next pod is the one whose normalised request best
//     matches the claim's free capacity, so cpu and memory fill together.
//     Both score each distinct request once, not each class: a workload
//     whose labels and selectors vary has thousands of classes of a pod
//     or two, and a scan per pod added would be quadratic.
//     New claims are only sized from zones where the anchor class still
//     has spread quota, so a type missing from some zones cannot strand
//     a zone's share. The target type only bounds a claim's size: the
//     claim keeps every zone its pods allow, so a target sold in one zone
//     does not pin the smaller type it launches as to that zone.
//     - Flexibility floors (flex.go) cap every claim's size: a pod joins a
//     claim only if, with it, at least MinSpotOptions (default 15) spot
//     (type, zone) offerings still hold the claim and every pool
//     requirement with minValues still has that many distinct values
//     among the fitting types of one capacity type. A claim that would
//     fall below goes to another claim: a little packing is traded for a
//     launch that survives a shortage in a few spot pools (15 is also
//     Karpenter's spot-to-spot minimum), and minValues shrinks claims
//     instead of failing pods. Pods bound to one zone (zone spread and
//     affinity quotas) count the options of that zone. A floor that one
//     pod of the claim cannot reach in the pool at all is waived (the
//     pool's catalog is what it is; an unreachable minValues is then
//     reported). Target choice (LP seeding, value sizing, chooseTarget)
//     only considers types whose full fill keeps the floors among the
//     types at least as large in every dimension, so claims fill to their
//     target instead of stopping short of it.
//  7. Repacking (repack.go). Rounding leaves a few large claims partly
//     filled (the LP buys 1.6 memory nodes, a plan buys 2). Once a pool is
//     packed, the worst-filled claims (price × unused share) are taken
//     apart and their pods re-placed on strictly cheaper types, by value
//     and, as a second attempt, each class on its own cheapest type per
//     pod; then claims are drained, most expensive first, into the spare
//     room of one other claim each without that claim growing (a large
//     memory node a third empty in cpu takes a dozen small nodes' pods).
//     Each move is kept only when the cost drops. Only pods without
//     topology constraints, host ports or zone quotas move: placing one
//     records nothing, so a move is undone exactly.
//  8. Shrinking and options (options.go). Each claim launches as the
//     cheapest type that holds its pods plus DaemonSet overhead; its
//     options are the fitting (type, zone, capacity type) in its allowed
//     slots, cheapest first, priced at most OptionPriceCeiling (default
//     2×, or the NodePool's optionPriceCeilingPercent) times the cheapest
//     — price-capacity-optimized may launch any of them — widened past
//     the ceiling only as far as the spot-option floor and minValues
//     need, then cut to MaxOptionsPerClaim (the cut keeps the cheapest
//     option of each value minValues needs). Only the cheapest option's
//     capacity type is listed (the next one when its options miss a
//     minValues): spot when the pool allows it and it is cheaper; the
//     provider falls back to on-demand itself when spot is short (ICE),
//     and the next solve sees the ICE cache.
//  9. Limits (limits.go). A pool's limits cap the capacity of its claims in
//     every resource they name, asked for by a pod or not (each named
//     resource is a dimension), and their count (limits.nodes); pool.exceeds
//     and canOpen decide whether a claim fits them, and a refused pod's
//     reason quotes the limit and what the pool counts. A claim may launch
//     any of its options, so it is charged for the largest it keeps. While packing, a claim is charged
//     for its cheapest type and the options minValues makes it keep (a
//     requirement of the pool), never for spot options, so what fits in
//     the limit is not refused; at plan time each claim keeps the options
//     within that charge plus a share of the limit's slack, in proportion
//     to its charge, and counts the largest it keeps. When pending
//     requests reach 70% of a limit's headroom, types are chosen by the
//     share of the headroom a claim sized to them is charged (price breaks
//     ties: less overhead, shapes that fit the pods, no oversized minValues
//     options) and the pods using least of the limit are packed first, so
//     the limit holds as many pods as it can. With minValues, a claim is
//     then charged for lean options (leanCharge): among the types holding
//     its pods, by share of the headroom, the least, then per value
//     minValues still lacks the least-share type bringing it — per family
//     the size whose binding resource matches the pods' (c6g.4xlarge,
//     m6g.2xlarge and r6g.xlarge all have 32Gi) — and a type's cost is
//     the share of what its fill, not its allocatable, is charged.
//     With Options.ChargeExpectedLaunch (charge.go) a claim is charged
//     instead what it is expected to launch as (ClaimCharge: its cheapest
//     option), and its options are those fitting the limit left at its
//     turn in plan order — launched capacity and the charges of the
//     claims before it — with minValues met among them; claims whose
//     minValues options exceed their charge most go first, and a pod joins
//     a claim only if every claim still finds that room (turnsExceed). The
//     launcher must then re-trim each claim at launch to what the launched
//     capacity leaves (TrimToLimit), one claim of a limited pool at a time.
//
// Two lower bounds measure plans (lowerbound.go). CostLowerBound is the LP
// relaxation of cpu+memory covering; on real catalogs it is far below any
// achievable plan, because it buys a t3.nano's 2 vCPU for $0.001/h although
// no pod needing more than 100Mi can use them. PackingLowerBound adds pod
// slots, lets a pod only go to a type it fits on whole, and counts whole
// pods on types that hold at most 24 (a configuration LP solved by cutting
// planes, valid at every iterate); it is verified against brute force on
// tiny catalogs and by strong duality on the real one. The benchmarks
// report both ratios.
//
// Known limits: namespace selectors in pod affinity terms are read as
// "all namespaces"; a spread counts matching pods on every node, not only
// on nodes that match the spreading pod's own node affinity (its domains
// do follow nodeAffinityPolicy), so a spreading pod whose node affinity
// excludes nodes the group's other pods use may be judged on a minimum
// kube-scheduler does not see; a topology key that no NodePool gives a
// known value (no such label, or a requirement listing no values) can
// only be met by existing nodes that carry it; at most 64 (zone, capacity
// type) pairs and 64 topology keys besides zone and hostname per solve.
package scheduling
