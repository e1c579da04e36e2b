package interruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// Recheck is how often a marked claim's command is looked at again when
// nothing it watches changes.
const Recheck = 10 * time.Second

// Input is what one decision about a marked claim in a disruption command
// reads: the mark, the pods on its node and the readiness of the command's
// replacements (the disruption executor launched them).
type Input struct {
	Mark Mark
	Mode RebalanceMode
	// Pods are the pods bound to the claim's node.
	Pods []*corev1.Pod
	// Replacements is how many claims the command launched for the node's
	// pods; Ready how many of them have initialized. No replacements means
	// the pods fit on nodes already running.
	Replacements, Ready int
	Now                 time.Time
}

// Verdict is what to do with the claim now.
type Verdict struct {
	// Delete the claim: the termination controller taints, drains and terminates.
	Delete bool
	// Why is the sentence for the drain's Event.
	Why string
	// Ready: every replacement of the command can run pods now.
	Ready bool
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

// Holds reports whether a command for a claim with mark only launches its
// replacements and keeps the claim: a rebalance recommendation in any mode
// but drain (prespin), until a notice with a deadline follows.
func Holds(m Mark, mode RebalanceMode) bool {
	return m.Reason == nsv1.DisruptingReasonRebalanceRecommendation && mode != RebalanceDrain
}

// Decide is the verdict for a marked claim whose disruption command is
// under way: delete it as soon as the command's replacements have
// initialized, or when the deadline minus the longest grace period of the
// pods a drain moves arrives, whichever is first. A rebalance
// recommendation in prespin mode keeps the claim (and its ready
// replacement) until a notice with a deadline follows; in drain mode it
// goes once the replacements are ready (its budget was taken when the
// command started).
func Decide(in Input) Verdict {
	moved := Moved(in.Pods)
	v := Verdict{Ready: in.Ready >= in.Replacements, RequeueAfter: Recheck}
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
		v.Waiting = fmt.Sprintf("waiting for replacement capacity for its pods (%d of %d replacements initialized)", in.Ready, in.Replacements)
	case Holds(in.Mark, in.Mode):
		v.Waiting = "replacement ready; the node is drained only if an interruption notice follows (rebalance mode prespin)"
	case in.Mark.Reason == nsv1.DisruptingReasonRebalanceRecommendation:
		v.Delete = true
		v.Why = readyWhy(len(moved)) + " (rebalance mode drain)"
	default:
		v.Delete = true
		v.Why = readyWhy(len(moved))
	}
	return v
}

func readyWhy(moved int) string {
	if moved == 0 {
		return "no pods to move"
	}
	return fmt.Sprintf("replacement capacity ready for its %d pods", moved)
}
