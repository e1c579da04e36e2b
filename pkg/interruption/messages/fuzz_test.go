package messages

import (
	"strings"
	"testing"
)

// FuzzParse checks that any body parses without a panic into a message
// that keeps the package's promises: a known kind, an ignored message with
// a reason and no instances, an actionable one with valid, distinct ids.
func FuzzParse(f *testing.F) {
	for _, s := range []string{spotWarning, spotStop, spotHib, spotNoTime, spotByARN, spotNoID, spotBadID, spotNull, spotArray,
		rebalanceRec, strings.Replace(stateTmpl, "STATE", "stopping", 1), strings.Replace(stateTmpl, "STATE", "terminated", 1),
		healthRetire, healthOldShape, healthNoStart, healthIssue, healthEBS, healthNoInst, healthAbuse,
		reservationWarning, reservationNoEnd, reservationNoID, asgLifecycle, sqsTestEvent, snsWrap(spotWarning), snsWrap(healthRetire), "", "{}", "null", `"x"`} {
		f.Add(s)
	}
	known := map[Kind]bool{}
	for _, k := range Kinds {
		known[k] = true
	}
	reasons := map[IgnoreReason]bool{}
	for _, r := range IgnoreReasons {
		reasons[r] = true
	}
	f.Fuzz(func(t *testing.T, body string) {
		m := Parse(body)
		if !known[m.Kind] {
			t.Fatalf("unknown kind %q", m.Kind)
		}
		if m.Kind == KindIgnored {
			if m.Ignored == nil || !reasons[m.Ignored.Reason] || m.Ignored.Detail == "" {
				t.Fatalf("ignored without a reason: %+v", m.Ignored)
			}
			if len(m.InstanceIDs) != 0 || !m.Deadline.IsZero() {
				t.Fatalf("ignored message with instances %v or deadline %v", m.InstanceIDs, m.Deadline)
			}
			return
		}
		if m.Ignored != nil || len(m.InstanceIDs) == 0 {
			t.Fatalf("actionable %s with ignored %+v and instances %v", m.Kind, m.Ignored, m.InstanceIDs)
		}
		seen := map[string]bool{}
		for _, id := range m.InstanceIDs {
			if !IsInstanceID(id) || seen[id] {
				t.Fatalf("bad or repeated instance id %q in %v", id, m.InstanceIDs)
			}
			seen[id] = true
		}
	})
}
