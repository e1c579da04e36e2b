// Package disruption is the disruption planner: given one cluster snapshot
// (nodes with their NodeClaims and pods, NodePools with their budgets and
// consolidation settings, instance types with prices and offerings, the
// insufficient-capacity view, node classes, now) it proposes the voluntary
// disruptions worth making, in this order:
//
//  0. Repacking (repack.go): when a pool's nodes are the wrong shape for
//     what is left — deleting alone could not get within MinSavingsShare
//     of a fresh plan for their pods — remove what the budget allows
//     (loaded nodes first, then empty ones): onto the nodes that stay when
//     their pods fit there, else onto the fresh plan's claims those pods
//     land on (fewer nodes then, so it launches no more than it removes);
//     later rounds delete the rest onto them. Replacements are judged
//     against the pool's limits less what their candidates count.
//     While the loaded nodes are still within consolidateAfter, empty
//     nodes that would pay for such a repack wait (a minute at most).
//  1. Emptiness: nodes that run no workload pods for consolidateAfter.
//  2. Drift: nodes that no longer match their NodePool (template hash,
//     requirements) or their EC2NodeClass (hash, resolved AMI, subnet or
//     security groups); see drift.go for the hash annotations.
//  3. Expiration: nodes older than their claim's expireAfter.
//  4. Return to spot (spot.go): nodes that launched on-demand only because
//     spot had no capacity (the provider's nsv1.AnnotationSpotFallback)
//     are replaced by spot nodes once the insufficient-capacity view no
//     longer hides the spot offerings their pods need and the spot
//     replacements save MinSavingsShare whichever option launches; a
//     failed return backs off (1m doubling to 1h, kept on the claim), and
//     a pool's spec.disruption.returnToSpot: Disabled turns it off.
//  5. Multi-node consolidation: the largest prefix of the candidates (in
//     order of price per pod moved) whose pods fit on the rest of the
//     cluster plus at most one new, cheaper node.
//  6. Single-node consolidation: delete a node whose pods fit elsewhere, or
//     replace it with one cheaper node.
//
// Before those, two forceful steps: the interruption handler's marks
// (interrupt.go) and, behind Options.NodeRepair, node repair (repair.go):
// a node whose Ready condition, or a condition the EKS node monitoring
// agent sets, has been unhealthy past its toleration (DefaultRepairPolicies)
// is replaced whatever budgets, PDBs and do-not-disrupt say, and its
// claim's termination timestamp is brought to now — unless more than 20 %
// (rounded up) of its pool's nodes are unhealthy, when repair waits.
//
// Consolidation, drift and expiry are decided by re-running the solver
// (pkg/scheduling.Solve) with the candidates removed: their pods are the
// pods to place, every other node is existing capacity. Actions are
// computed one after another on a working copy of the cluster, so later
// actions see the pods earlier ones move. A node that took pods from an
// earlier action may still be deleted by a later one, but not replaced:
// that would make a command wait on moves the cluster has not made yet.
// Each action carries its method, its budget reason, the candidates, the
// pods it moves, the replacement claims to launch and its savings in $/h.
//
// A plan over a thousand nodes takes a few dozen solves at most
// (MaxSolves bounds it): when no pod has pod (anti-)affinity, topology
// spread or host ports the solver gets each node as its remaining room
// (compact.go), and single-node candidates that could not fit anyway are
// skipped without a solve.
//
// Anti-churn rules: a consolidation must save at least MinSavingsShare of
// the candidates' price even if the dearest launch option of its
// replacement is the one launched; a replacement never launches an offering
// one of its candidates runs on (same type, zone and capacity type) nor an
// offering in the insufficient-capacity view; spot-to-spot replacements need
// the SpotToSpotConsolidation gate and at least MinSpotOptions spot options.
// Candidates younger than consolidateAfter (since the last pod event or
// initialization), replacements launched less than ten minutes ago (no
// launch and remove within the same ten minutes), nodes or pods marked
// nodesmith.sh/do-not-disrupt, pods a PodDisruptionBudget does not let go,
// and nodes whose pods have nowhere to go are skipped, each with a typed
// SkipReason and a message. A consolidation launches at most one node,
// except a repack, which launches no more nodes than it removes.
//
// Budgets (pkg/disruption/budget) are counted per NodePool and reason; the
// nodes already disrupting or being deleted, and those of earlier actions
// of the same plan, count against every reason.
//
// A plan depends on the clock only at the instants it compared it with
// (consolidateAfter, expiry, do-not-disrupt ends, repack holds, the settle
// window, budget windows). Input.Previous hands the caller's last plan
// back: Compute returns it again while a fingerprint of everything else it
// reads is unchanged and none of those instants has come (reuse.go), so a
// quiet cluster is not planned from scratch every poll.
//
// The package is pure: it takes plain values and now, and must not import
// client-go clients, controller-runtime or the AWS SDK. The disruption
// controller (pkg/controllers/disruptor) gathers the input, validates the
// plan after a delay and carries it out; the simulator does the same in
// virtual time.
package disruption
