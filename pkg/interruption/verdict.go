package interruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// Recheck is how often a Disrupting claim is looked at again when nothing
// it watches changes: nominations expire and prespun replacements must stay
// held (see Verdict.Wake).
const Recheck = 10 * time.Second

// Input is what one decision about a Disrupting claim reads.
type Input struct {
	Mark Mark
	Mode RebalanceMode
	// Self are the claim's and its node's names: a nomination onto them is
	// no replacement.
	Self []string
	// Pods are the pods bound to the claim's node.
	Pods []*corev1.Pod
	// Nominated is the provisioner's plan for a pod (a node or claim name).
	Nominated func(types.UID) (target string, ok bool)
	// Ready reports whether a node or claim can run pods now.
	Ready func(target string) bool
	// BudgetAllows: the NodePool's budgets allow one more Rebalance
	// disruption now (read for a rebalance in drain mode only).
	BudgetAllows bool
	Now          time.Time
}

// Verdict is what to do with the claim now.
type Verdict struct {
	// Delete the claim: the termination controller taints, drains and terminates.
	Delete bool
	// Why is the sentence for the drain's Event.
	Why string
	// Planned: every pod the drain will move has a place planned (a
	// replacement claim, or room on another node).
	Planned bool
	// Ready: every such place can run pods now.
	Ready bool
	// Wake asks the provisioner for a cycle now: some pods have no place planned.
	Wake bool
	// Renew asks for a cycle in the provisioner's own time: a prespun
	// replacement's nominations must be renewed so it is not mistaken for
	// empty capacity.
	Renew bool
	// Waiting says what holds a drain that is not due yet, for an Event.
	Waiting string
	// RequeueAfter is when to decide again if nothing changes first.
	RequeueAfter time.Duration
}

// Moved are the pods a drain of the node will move elsewhere.
func Moved(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if provisioning.Reschedulable(p) {
			out = append(out, p)
		}
	}
	return out
}

// DrainBy is when the drain must start at the latest so every moved pod's
// terminationGracePeriodSeconds fits before deadline.
func DrainBy(deadline time.Time, moved []*corev1.Pod) time.Time {
	var longest int64
	for _, p := range moved {
		g := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if p.Spec.TerminationGracePeriodSeconds != nil {
			g = *p.Spec.TerminationGracePeriodSeconds
		}
		longest = max(longest, g)
	}
	return deadline.Add(-time.Duration(longest) * time.Second)
}

// Decide is the verdict for a Disrupting claim.
func Decide(in Input) Verdict {
	moved := Moved(in.Pods)
	v := Verdict{Planned: true, Ready: true, RequeueAfter: Recheck}
	self := map[string]bool{}
	for _, s := range in.Self {
		self[s] = true
	}
	for _, p := range moved {
		target, ok := in.Nominated(p.UID)
		if !ok || self[target] {
			v.Planned, v.Ready = false, false
			continue
		}
		if !in.Ready(target) {
			v.Ready = false
		}
	}
	v.Wake = !v.Planned
	if !in.Mark.Deadline.IsZero() {
		by := DrainBy(in.Mark.Deadline, moved)
		if !in.Now.Before(by) {
			v.Delete = true
			v.Why = fmt.Sprintf("the instance goes away at %s; draining now leaves its pods their grace periods",
				in.Mark.Deadline.UTC().Format(time.RFC3339))
			if v.Ready {
				v.Why = "replacement ready and " + v.Why
			}
			return v
		}
		v.RequeueAfter = min(v.RequeueAfter, by.Sub(in.Now))
	}
	switch {
	case !v.Ready:
		v.Waiting = "waiting for replacement capacity for its pods"
	case in.Mark.Reason != nsv1.DisruptingReasonRebalanceRecommendation:
		v.Delete = true
		v.Why = readyWhy(len(moved))
	case in.Mode != RebalanceDrain:
		// Prespin: hold the replacement until a notice with a deadline comes.
		v.Renew = true
		v.Waiting = "replacement ready; the node is drained only if an interruption notice follows (rebalance mode prespin)"
	case !in.BudgetAllows:
		v.Renew = true
		v.Waiting = "replacement ready; the NodePool's disruption budget allows no more Rebalance disruptions now"
	default:
		v.Delete = true
		v.Why = readyWhy(len(moved)) + " (rebalance mode drain)"
	}
	return v
}

func readyWhy(moved int) string {
	if moved == 0 {
		return "no pods to move"
	}
	return fmt.Sprintf("replacement capacity ready for its %d pods", moved)
}
