package lifecycle

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// IsEmpty reports whether a node holding pods runs no workload: only
// DaemonSet pods, static pods and finished pods are left.
func IsEmpty(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if IsTerminal(p) || IsDaemonSetPod(p) || IsOwnedByNode(p) {
			continue
		}
		return false
	}
	return true
}

// EmptySince is when an empty node became eligible for removal: consolidateAfter
// after the claim last saw a pod arrive or leave (or after it initialized).
// ok is false when the pool never consolidates.
func EmptySince(claim *nsv1.NodeClaim, pool *nsv1.NodePool) (eligibleAt time.Time, ok bool) {
	after := pool.Spec.Disruption.ConsolidateAfter
	if after.Raw != nil && after.IsNever() {
		return time.Time{}, false
	}
	var d time.Duration
	if after.Duration != nil {
		d = *after.Duration
	}
	last := claim.Status.LastPodEventTime.Time
	if init := findTime(claim, nsv1.ConditionInitialized); init.After(last) {
		last = init
	}
	if last.IsZero() {
		last = claim.CreationTimestamp.Time
	}
	return last.Add(d), true
}

func findTime(claim *nsv1.NodeClaim, t string) time.Time {
	for _, c := range claim.Status.Conditions {
		if c.Type == t && c.Status == "True" {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// AllowedDisruptions is how many more of a pool's nodes may be disrupted for
// reason at now: the most restrictive active budget, minus the nodes already
// being disrupted, never below zero. total is the pool's node count. A budget
// that cannot be parsed allows nothing (fail closed) and is reported in err.
func AllowedDisruptions(budgets []nsv1.Budget, reason nsv1.DisruptionReason, total, disrupting int, now time.Time) (int, error) {
	allowed := math.MaxInt
	if len(budgets) == 0 {
		budgets = []nsv1.Budget{{Nodes: "10%"}}
	}
	var firstErr error
	for _, b := range budgets {
		if !appliesTo(b, reason) {
			continue
		}
		active, err := budgetActive(b, now)
		if err != nil {
			allowed, firstErr = 0, errOr(firstErr, err)
			continue
		}
		if !active {
			continue
		}
		n, err := budgetNodes(b.Nodes, total)
		if err != nil {
			allowed, firstErr = 0, errOr(firstErr, err)
			continue
		}
		allowed = min(allowed, n)
	}
	if allowed == math.MaxInt {
		allowed = total
	}
	return max(0, allowed-disrupting), firstErr
}

func errOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func appliesTo(b nsv1.Budget, reason nsv1.DisruptionReason) bool {
	if len(b.Reasons) == 0 {
		return true
	}
	for _, r := range b.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// budgetActive reports whether a scheduled budget's window contains now: the
// latest scheduled start within the last Duration has passed and not ended.
func budgetActive(b nsv1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil {
		return true, nil
	}
	if b.Duration == nil {
		return false, fmt.Errorf("budget schedule %q has no duration", *b.Schedule)
	}
	sched, err := cron.ParseStandard(*b.Schedule)
	if err != nil {
		return false, fmt.Errorf("parsing budget schedule %q: %w", *b.Schedule, err)
	}
	// The window is active when a start falls in (now-duration, now].
	next := sched.Next(now.UTC().Add(-b.Duration.Duration))
	return !next.After(now.UTC()), nil
}

func budgetNodes(v string, total int) (int, error) {
	if strings.HasSuffix(v, "%") {
		p, err := strconv.Atoi(strings.TrimSuffix(v, "%"))
		if err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("budget nodes %q is not a percentage from 0%% to 100%%", v)
		}
		// Rounded up so a 10% budget still lets a small pool make progress.
		return int(math.Ceil(float64(total) * float64(p) / 100)), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("budget nodes %q is not a whole number", v)
	}
	return n, nil
}
