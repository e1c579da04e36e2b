package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Defaults of Options.
const (
	// DefaultMinSavingsShare is the least share of its candidates' price a
	// consolidation must save: smaller savings are not worth the churn.
	DefaultMinSavingsShare = 0.10
	// DefaultMaxCandidatesPerCommand bounds a multi-node consolidation.
	DefaultMaxCandidatesPerCommand = 100
	// DefaultMaxSolves bounds the solver runs of one plan, so a plan over
	// thousands of nodes stays within a second; candidates left are
	// reported NotEvaluated and come up again in the next plan.
	DefaultMaxSolves = 120
)

// Options tune a plan. The zero value is the default.
type Options struct {
	// MinSavingsShare is the least share of the candidates' price a
	// consolidation must save (default 0.10; 0 < share ≤ 1).
	MinSavingsShare float64
	// SpotToSpotConsolidation allows replacing spot nodes with a cheaper
	// spot node (the SpotToSpotConsolidation feature gate).
	SpotToSpotConsolidation bool
	// MinSpotOptions is the fewest spot launch options a spot-to-spot
	// replacement must keep (default scheduling.DefaultMinSpotOptions, 15).
	MinSpotOptions int
	// MaxCandidatesPerCommand bounds a multi-node consolidation (default 100).
	MaxCandidatesPerCommand int
	// MaxSolves bounds the solver runs of one plan (default 120).
	MaxSolves int
	// Solve tunes the solver runs.
	Solve scheduling.Options
	// Rebalance is what a rebalance recommendation's mark does (default
	// interruption.DefaultRebalanceMode, prespin).
	Rebalance interruption.RebalanceMode
	// NodeRepair replaces nodes unhealthy past their toleration
	// (DefaultRepairPolicies; the NodeRepair feature gate, off by default
	// as in Karpenter).
	NodeRepair bool
}

func (o Options) withDefaults() Options {
	if o.MinSavingsShare <= 0 || o.MinSavingsShare > 1 {
		o.MinSavingsShare = DefaultMinSavingsShare
	}
	if o.MinSpotOptions <= 0 {
		o.MinSpotOptions = scheduling.DefaultMinSpotOptions
	}
	if o.MaxCandidatesPerCommand <= 0 {
		o.MaxCandidatesPerCommand = DefaultMaxCandidatesPerCommand
	}
	if o.MaxSolves <= 0 {
		o.MaxSolves = DefaultMaxSolves
	}
	if o.Rebalance == "" {
		o.Rebalance = interruption.DefaultRebalanceMode
	}
	return o
}

// Input is everything a plan reads, gathered by the caller beforehand.
type Input struct {
	// Snapshot is the cluster: pods, nodes, NodeClaims, NodePools,
	// DaemonSets and PodDisruptionBudgets. Objects are read, never mutated.
	Snapshot *provisioning.Snapshot
	// InstanceTypes are each NodePool's instance types by pool name, with
	// current prices and availability. A pool missing here launches no
	// replacement, and its nodes are priced from their claims' status.
	InstanceTypes map[string][]*catalog.InstanceType
	// NodeClasses are the EC2NodeClasses by name, for drift. A claim whose
	// class is missing is not called drifted on its class.
	NodeClasses map[string]*awsv1.EC2NodeClass
	// Unavailable is the insufficient-capacity view: offerings no
	// replacement may launch into. May be nil.
	Unavailable func(instanceType, zone, capacityType string) bool
	// Nominated returns the node or claim a pending pod's live nomination
	// holds it for (the provisioner's), if any. May be nil. Held pods take
	// room on their target, and a node pods are nominated to is not a
	// candidate.
	Nominated provisioning.NominatedFunc
	// Disrupting reports claims the caller acted on whose deletion or
	// marking the snapshot may not show yet; they count against budgets and
	// are no candidates. May be nil.
	Disrupting func(claim string) bool
	// BufferPods are the capacity buffers' virtual pods
	// (provisioning.BufferPods). Each that fits on a node now is taken as
	// that node's pod: its room is no waste, so a node holding buffer room
	// is not empty and consolidation must find the room elsewhere before
	// it removes the node. May be nil.
	BufferPods []*corev1.Pod
	// Booked reports claims and nodes a Provisioned ProvisioningRequest
	// keeps for its pods (the booking window): they are no candidates
	// until it runs out. May be nil.
	Booked  func(target string) bool
	Now     time.Time
	Options Options
	// Previous is the caller's last plan, if any. When nothing the plan
	// reads has changed since and none of the instants it compared the
	// clock with has come (Plan.ValidUntil), Compute returns a copy of
	// it, marked Reused, instead of planning again (reuse.go).
	Previous *Plan
}

// Method is how an action was found.
type Method string

const (
	MethodEmptiness    Method = "Emptiness"
	MethodDrift        Method = "Drift"
	MethodExpiration   Method = "Expiration"
	MethodReturnToSpot Method = "ReturnToSpot"
	// MethodInterruption carries out the interruption handler's mark on a
	// node (interruption.MarkOf): a spot interruption warning, a scheduled
	// change, an instance stopping (forced, reason Interrupted), or a
	// rebalance recommendation (reason Rebalance; prespin holds, drain is
	// budgeted).
	MethodInterruption Method = "Interruption"
	// MethodRepair replaces a node unhealthy past its toleration (node
	// repair, repair.go): forced, reason Unhealthy.
	MethodRepair                  Method = "Repair"
	MethodMultiNodeConsolidation  Method = "MultiNodeConsolidation"
	MethodSingleNodeConsolidation Method = "SingleNodeConsolidation"
)

// Candidate is a node an action disrupts.
type Candidate struct {
	Claim *nsv1.NodeClaim
	// Node is the claim's registered Node.
	Node *corev1.Node
	// NodePool is the claim's pool name.
	NodePool     string
	InstanceType string
	Zone         string
	CapacityType string
	// Price is the node's current $/h (its offering's price, or the
	// claim's launch price when the offering is unknown).
	Price float64
	// Pods are the pods that must move: not DaemonSet, static, finished or
	// already terminating pods.
	Pods []*corev1.Pod
	// Why says why the node is a candidate (drift detail, expiry time…).
	Why string
}

// Action is one disruption: delete the candidates, after launching the
// replacements (if any) and waiting for them to initialize.
type Action struct {
	Method Method
	// Reason is the budget reason the action counts against.
	Reason     nsv1.DisruptionReason
	Candidates []*Candidate
	// Replacements are the claims to launch first, each with its pods and
	// launch options; empty when the pods fit on existing nodes.
	Replacements []*scheduling.ClaimPlan
	// Pods are the pods the action moves (every candidate's Pods; a
	// candidate that took pods from an earlier action of the plan lists
	// those too, and such an action never has replacements).
	Pods []*corev1.Pod
	// Savings is the candidates' price minus the replacements' expected
	// price (their cheapest options), in $/h. Consolidations save at least
	// MinSavingsShare of the candidates' price even when the dearest option
	// launches; drift and expiry may cost money (negative savings).
	Savings float64
	// Message is a human summary for events and logs.
	Message string
	// Forced: the method is forceful (expiry). No budget, PDB or
	// do-not-disrupt held it back (the drain still honours PDBs and
	// do-not-disrupt until the claim's terminationGracePeriod ends); the
	// executor carries it out without validation and deletes the
	// candidates in the same step as it launches the replacements.
	Forced bool
	// Deadline is when the candidates' instance goes away (an interruption
	// notice's deadline); zero when none. The executor deletes the
	// candidates once the replacements have initialized, or when the
	// deadline less the pods' termination grace periods arrives, whichever
	// is first.
	Deadline time.Time
	// Hold: launch the replacements but keep the candidates until an
	// interruption notice follows (a rebalance recommendation in prespin
	// mode). A held action takes no budget.
	Hold bool
	// Condition is the unhealthy state a repair acts on, as
	// "Ready=Unknown" (RepairPolicy.String); empty for other methods.
	Condition string
}

// Price is the candidates' total $/h.
func (a *Action) Price() float64 {
	total := 0.0
	for _, c := range a.Candidates {
		total += c.Price
	}
	return total
}

// ReplacementPrice is the replacements' expected total $/h.
func (a *Action) ReplacementPrice() float64 {
	total := 0.0
	for _, r := range a.Replacements {
		total += r.Price()
	}
	return total
}

// SkipReason says why a node was not disrupted.
type SkipReason string

const (
	// SkipNotInitialized: the node has not registered and initialized yet.
	SkipNotInitialized SkipReason = "NotInitialized"
	// SkipNodePoolNotFound: the claim's NodePool is gone or being deleted.
	SkipNodePoolNotFound SkipReason = "NodePoolNotFound"
	// SkipNodeDoNotDisrupt: the Node carries nodesmith.sh/do-not-disrupt=true.
	SkipNodeDoNotDisrupt SkipReason = "NodeDoNotDisrupt"
	// SkipPodDoNotDisrupt: a pod on the node carries nodesmith.sh/do-not-disrupt.
	SkipPodDoNotDisrupt SkipReason = "PodDoNotDisrupt"
	// SkipPodDisruptionBudget: a PodDisruptionBudget allows no eviction of a pod on the node.
	SkipPodDisruptionBudget SkipReason = "PodDisruptionBudget"
	// SkipPodsNominated: the provisioner planned pending pods onto the node.
	SkipPodsNominated SkipReason = "PodsNominated"
	// SkipBooked: a ProvisioningRequest's booking keeps the node for its pods.
	SkipBooked SkipReason = "Booked"
	// SkipReplacementInProgress: the node is a replacement whose candidates still exist.
	SkipReplacementInProgress SkipReason = "ReplacementInProgress"
	// SkipConsolidationDisabled: the pool's consolidateAfter is Never.
	SkipConsolidationDisabled SkipReason = "ConsolidationDisabled"
	// SkipPolicyWhenEmpty: the pool only removes empty nodes and this one runs pods.
	SkipPolicyWhenEmpty SkipReason = "PolicyWhenEmpty"
	// SkipConsolidateAfter: a pod arrived or left (or the node initialized)
	// less than consolidateAfter ago.
	SkipConsolidateAfter SkipReason = "ConsolidateAfter"
	// SkipRecentReplacement: the node replaced others less than ten
	// minutes ago; consolidating it now would be launch-and-remove churn.
	SkipRecentReplacement SkipReason = "RecentReplacement"
	// SkipHeldForRepack: the node is empty and waits (at most a minute) for
	// its pool's nodes with pods to pass consolidateAfter, to pay for a
	// repack with them.
	SkipHeldForRepack SkipReason = "HeldForRepack"
	// SkipBudget: the pool's disruption budget for the reason is used up.
	SkipBudget SkipReason = "Budget"
	// SkipNowhereToGo: some of the node's pods fit on no other node and no new one.
	SkipNowhereToGo SkipReason = "PodsHaveNowhereToGo"
	// SkipNotCheaper: no deletion, and no replacement cheap enough (after
	// the same-offering and insufficient-capacity filters) to save
	// MinSavingsShare.
	SkipNotCheaper SkipReason = "NoCheaperReplacement"
	// SkipSpotToSpotDisabled: only a spot-to-spot replacement would save,
	// and the SpotToSpotConsolidation gate is off.
	SkipSpotToSpotDisabled SkipReason = "SpotToSpotDisabled"
	// SkipSpotToSpotFlexibility: the spot-to-spot replacement would keep
	// fewer than MinSpotOptions spot options.
	SkipSpotToSpotFlexibility SkipReason = "SpotToSpotTooFewOptions"
	// SkipReturnToSpotBackoff: the node's last return to spot failed (its
	// spot replacement did not come up) and the backoff has not passed.
	SkipReturnToSpotBackoff SkipReason = "ReturnToSpotBackoff"
	// SkipSpotUnavailable: a spot-fallback node whose pods no spot offering
	// can take yet (the insufficient-capacity view still hides them).
	SkipSpotUnavailable SkipReason = "SpotUnavailable"
	// SkipRepairBlocked: the node is unhealthy past its toleration, but
	// more of its pool's nodes are unhealthy than UnhealthyAllowed lets
	// repair go on with.
	SkipRepairBlocked SkipReason = "RepairBlocked"
	// SkipNotEvaluated: the plan's solver budget ran out first; the next
	// plan looks again.
	SkipNotEvaluated SkipReason = "NotEvaluated"
)

// Skip is a node the plan did not disrupt, and why.
type Skip struct {
	Claim    string
	Node     string
	NodePool string
	Reason   SkipReason
	Message  string
}

// Plan is the planner's answer.
type Plan struct {
	// Actions in the order they were decided (each saw the earlier ones).
	Actions []*Action
	// Skipped are the nodes that were candidates for something (or could
	// have been) and were left, one entry per node, sorted by claim name.
	Skipped []Skip
	// Candidates counts the nodes eligible per reason before budgets and
	// simulation.
	Candidates map[nsv1.DisruptionReason]int
	// Allowed is each pool's budget allowance per reason when the plan
	// started (after the nodes already disrupting).
	Allowed map[string]map[nsv1.DisruptionReason]int
	// BudgetErrors are budgets that cannot be parsed (they allow nothing),
	// by pool.
	BudgetErrors map[string]error
	// Solves is how many solver runs the plan took.
	Solves int
	// ValidUntil is when the plan may first turn out differently for the
	// same cluster (a consolidateAfter or expiry coming, at most
	// five minutes on); zero when the plan cannot be reused.
	ValidUntil time.Time
	// Reused: the plan is Previous handed back, nothing having changed.
	Reused bool

	reuse *reuse
}
