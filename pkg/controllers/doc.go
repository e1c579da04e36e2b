// Package controllers is the home of Nodesmith's reconcilers, one package per
// controller:
//
//   - state: the informer-backed view of nodes, pods, NodeClaims, NodePools,
//     DaemonSets and PDBs that every decision is gathered from, plus the
//     in-memory nominations of pods onto in-flight capacity;
//   - provisioner: batches pending pods, runs the pure solver
//     (pkg/scheduling) and creates and launches the NodeClaims it plans;
//   - nodeclaim: launch, registration, initialization and liveness
//     of each NodeClaim, and (nodeclaim.disruption) its Drifted and
//     Consolidatable conditions, by pkg/disruption's rules;
//   - termination: taint, drain (Eviction API, PDBs, do-not-disrupt, tiers),
//     terminate the instance, remove finalizers;
//   - garbagecollection: orphan instances and claims whose instance vanished;
//   - nodepool: status, usage against limits and readiness;
//   - costmetrics: the fleet's $/h by pool, capacity type and instance type
//     and by namespace, as metrics (a singleton, pkg/cost's figures);
//   - podevents: stamps status.lastPodEventTime on a NodeClaim when pods
//     arrive on or leave its node (consolidateAfter counts from it);
//   - disruptor: the disruption singleton — plans (pkg/disruption) empty,
//     drifted, expired and underutilized nodes within budgets, validates,
//     launches replacements first and deletes what they replace;
//   - events: typed, de-duplicated Events.
//
// Every reconciler follows one skeleton: get the object, put the finalizer on
// first, patch status in a deferred call, run the phases, return the lowest
// result. RequeueAfter waits, an error retries, reconcile.TerminalError
// gives up; Requeue: true is never used. An error that is only
// optimistic-lock conflicts retries after operator.ConflictRetry, logged at
// debug level, not as an error. Decisions are the pure functions of
// pkg/lifecycle, pkg/scheduling and pkg/disruption; these packages only
// gather and act.
package controllers
