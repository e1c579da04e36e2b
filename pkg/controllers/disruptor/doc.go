// Package disruptor is the disruption controller and the one executor of
// every replace-then-delete: one operator.Singleton that, step by step,
// gathers the cluster (pkg/controllers/state), asks the pure planner
// (pkg/disruption) for the disruptions to make (nodes the interruption
// handler marked, expired, drifted, empty and underutilized nodes, spot
// fallbacks going back to spot, within the NodePools' budgets), and carries
// them out:
//
//  1. A plan is not acted on at once: it waits ValidationDelay (15 s), then
//     the cluster is planned again and the new plan's actions that the
//     first one also had are carried out (an action only gains room and
//     budget when actions planned before it are left out); the new plan's
//     other actions wait ValidationDelay in turn.
//  2. An action without replacements deletes its NodeClaims; the
//     termination controller taints, drains (Eviction API, PDBs) and
//     terminates them.
//  3. An action with replacements is a command: its candidates are
//     annotated (nodesmith.sh/disruption-command, -replacements, -reason,
//     -started) and their nodes tainted nodesmith.sh/disrupted:NoSchedule,
//     the replacement NodeClaims are created (provisioning.NewNodeClaim,
//     annotated nodesmith.sh/replacement-for) and launched by the NodeClaim
//     controller; once every replacement is Initialized the candidates are
//     deleted. A replacement that is deleted first, or a command older than
//     CommandTimeout, aborts: the annotations and taint come off.
//  4. Forced actions (expiry, interruptions) and every action for a node
//     the interruption handler marked (MethodInterruption) skip the
//     validation. An interruption's command (interrupted.go) deletes its
//     candidate once the replacements have initialized or when the notice's
//     deadline less the pods' grace periods arrives (terminateBy,
//     interruption.Decide), whichever is first, with the claim's
//     termination timestamp at the deadline; a rebalance recommendation in
//     prespin mode holds its candidate (nodesmith.sh/disruption-hold) until
//     a notice with a deadline follows. A failed replacement releases the
//     command (the mark and taint stay) and the next plan launches another;
//     a marked claim with no Node yet is deleted at once. The controller is
//     operator.Wakeable: the interruption queue wakes it when it marks a
//     node. With the Disruption feature gate off it still runs, for the
//     interruption handler's marks only.
//  5. Node repair (MethodRepair, the NodeRepair gate) is forced like
//     expiry: replacements launched and the claim deleted in the same
//     step, its termination timestamp brought to now first so the drain
//     waits on no eviction; a Repairing Event on the claim and the node
//     names the condition, how long it has held and its toleration, and
//     nodesmith_disruption_repairs_total counts it.
//
// Everything a step needs across steps is on the objects, except the plan
// awaiting validation and the claims acted on in the last minute (so a
// budget counts them before the cache shows it): a new leader simply plans
// again. Every decision leaves an Event and updates the nodesmith_disruption_*
// metrics. The emptiness controller this replaces is the planner's first
// method.
//
// It imports controller-runtime; the decisions are pkg/disruption's.
package disruptor
