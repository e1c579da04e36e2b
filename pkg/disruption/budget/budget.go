package budget

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Default is the budget of a pool that lists none (the API defaults it too;
// this covers objects built without the API server, as in tests and the
// simulator).
var Default = []nsv1.Budget{{Nodes: "10%"}}

// Limit is the most of a pool's total nodes that may be disrupting at once
// for reason at now: the smallest count among the active budgets that apply
// to reason (every node when none is active). A budget that cannot be parsed
// allows nothing (fail closed) and is reported in err.
func Limit(budgets []nsv1.Budget, reason nsv1.DisruptionReason, total int, now time.Time) (int, error) {
	if len(budgets) == 0 {
		budgets = Default
	}
	limit := math.MaxInt
	var firstErr error
	for _, b := range budgets {
		if !AppliesTo(b, reason) {
			continue
		}
		active, err := Active(b, now)
		if err != nil {
			limit, firstErr = 0, errOr(firstErr, err)
			continue
		}
		if !active {
			continue
		}
		n, err := Nodes(b.Nodes, total)
		if err != nil {
			limit, firstErr = 0, errOr(firstErr, err)
			continue
		}
		limit = min(limit, n)
	}
	if limit == math.MaxInt {
		limit = total
	}
	return limit, firstErr
}

func errOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// AppliesTo reports whether b governs reason: a budget without reasons
// governs every reason.
func AppliesTo(b nsv1.Budget, reason nsv1.DisruptionReason) bool {
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

// Active reports whether a scheduled budget's window contains now: a
// scheduled start fell within the last Duration. Unscheduled budgets are
// always active.
func Active(b nsv1.Budget, now time.Time) (bool, error) {
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
	// Active when a start falls in (now-duration, now]; cron's Next is
	// strictly after its argument.
	next := sched.Next(now.UTC().Add(-b.Duration.Duration))
	return !next.After(now.UTC()), nil
}

// NextChange is the first instant after now at which Active may answer
// differently for b: the next scheduled start, or the end of the window
// the earliest start within the last Duration opened (a later start may
// keep it open; the instant is then early, never late). ok is false for
// budgets that never change.
func NextChange(b nsv1.Budget, now time.Time) (time.Time, bool) {
	if b.Schedule == nil || b.Duration == nil {
		return time.Time{}, false
	}
	sched, err := cron.ParseStandard(*b.Schedule)
	if err != nil {
		return time.Time{}, false
	}
	now = now.UTC()
	next := sched.Next(now)
	if first := sched.Next(now.Add(-b.Duration.Duration)); !first.After(now) && first.Add(b.Duration.Duration).Before(next) {
		next = first.Add(b.Duration.Duration)
	}
	return next, !next.IsZero()
}

// Nodes reads a budget's nodes value against a pool of total nodes: a
// whole number, or a percentage rounded up so that a small pool still
// makes progress under "10%".
func Nodes(v string, total int) (int, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 100 {
			return 0, fmt.Errorf("budget nodes %q is not a percentage from 0%% to 100%%", v)
		}
		return int(math.Ceil(float64(total) * float64(n) / 100)), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("budget nodes %q is not a whole number", v)
	}
	return n, nil
}
