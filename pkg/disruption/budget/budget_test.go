package budget

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func str(s string) *string                                       { return &s }
func dur(d time.Duration) *metav1.Duration                       { return &metav1.Duration{Duration: d} }
func reasons(r ...nsv1.DisruptionReason) []nsv1.DisruptionReason { return r }

func TestAllowed(t *testing.T) {
	// Sunday 29 November 2026.
	noon := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		budgets    []nsv1.Budget
		reason     nsv1.DisruptionReason
		total      int
		disrupting int
		now        time.Time
		want       int
		wantErr    bool
	}{
		{name: "default 10% rounds up", total: 3, want: 1},
		{name: "percentage rounds up", budgets: []nsv1.Budget{{Nodes: "25%"}}, total: 9, want: 3},
		{name: "0% allows nothing", budgets: []nsv1.Budget{{Nodes: "0%"}}, total: 9, want: 0},
		{name: "count", budgets: []nsv1.Budget{{Nodes: "5"}}, total: 20, want: 5},
		{name: "a count above the pool is the pool", budgets: []nsv1.Budget{{Nodes: "100%"}}, total: 7, want: 7},
		{name: "already disrupting is subtracted", budgets: []nsv1.Budget{{Nodes: "5"}}, total: 20, disrupting: 4, want: 1},
		{name: "never below zero", budgets: []nsv1.Budget{{Nodes: "1"}}, total: 20, disrupting: 4, want: 0},
		{name: "most restrictive wins", budgets: []nsv1.Budget{{Nodes: "50%"}, {Nodes: "3"}}, total: 20, want: 3},
		{name: "budget for another reason ignored", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Reasons: reasons(nsv1.DisruptionReasonDrifted)}},
			reason: nsv1.DisruptionReasonEmpty, total: 4, want: 4},
		{name: "budget for the reason applies", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "1", Reasons: reasons(nsv1.DisruptionReasonDrifted, nsv1.DisruptionReasonExpired)}},
			reason: nsv1.DisruptionReasonExpired, total: 4, want: 1},
		{name: "scheduled budget inside its window", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: str("0 9 * * *"), Duration: dur(8 * time.Hour)}},
			total: 4, now: noon, want: 0},
		{name: "scheduled budget at the first minute of its window", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: str("0 9 * * *"), Duration: dur(8 * time.Hour)}},
			total: 4, now: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), want: 0},
		{name: "scheduled budget outside its window", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: str("0 9 * * *"), Duration: dur(8 * time.Hour)}},
			total: 4, now: time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC), want: 4},
		{name: "weekday window on a Sunday", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: str("0 9 * * mon-fri"), Duration: dur(8 * time.Hour)}},
			total: 4, now: noon, want: 4},
		{name: "schedule is UTC", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: str("0 9 * * *"), Duration: dur(time.Hour)}},
			total: 4, now: time.Date(2026, 11, 29, 9, 30, 0, 0, time.FixedZone("UTC+5", 5*3600)), want: 4},
		{name: "bad schedule fails closed", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "5", Schedule: str("whenever"), Duration: dur(time.Hour)}},
			total: 4, want: 0, wantErr: true},
		{name: "schedule without duration fails closed", budgets: []nsv1.Budget{{Nodes: "5", Schedule: str("@daily")}},
			total: 4, want: 0, wantErr: true},
		{name: "bad count fails closed", budgets: []nsv1.Budget{{Nodes: "lots"}}, total: 4, want: 0, wantErr: true},
		{name: "percentage over 100 fails closed", budgets: []nsv1.Budget{{Nodes: "150%"}}, total: 4, want: 0, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason := tt.reason
			if reason == "" {
				reason = nsv1.DisruptionReasonEmpty
			}
			got, err := Allowed(tt.budgets, reason, Ledger{Nodes: tt.total, Disrupting: tt.disrupting}, tt.now)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("Allowed = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNextChange(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 10, 0, 0, time.UTC)
	sched := func(s string, d time.Duration) nsv1.Budget {
		return nsv1.Budget{Nodes: "1", Schedule: &s, Duration: &metav1.Duration{Duration: d}}
	}
	for _, tc := range []struct {
		name string
		b    nsv1.Budget
		want time.Time // zero: never changes
	}{
		{"unscheduled", nsv1.Budget{Nodes: "1"}, time.Time{}},
		{"inactive: the next start", sched("0 12 * * *", time.Hour), time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)},
		{"active: the window's end", sched("0 9 * * *", 30*time.Minute), time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)},
		{"active, next start first", sched("*/5 * * * *", time.Hour), time.Date(2026, 12, 2, 9, 15, 0, 0, time.UTC)},
		{"starting now: the window's end", sched("10 9 * * *", 20*time.Minute), time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)},
		{"bad schedule", sched("nonsense", time.Hour), time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NextChange(tc.b, at)
			if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
				t.Fatalf("NextChange = %s, %v; want %s", got, ok, tc.want)
			}
			if !ok {
				return
			}
			// Active is the same from now until just before the change.
			before, _ := Active(tc.b, at)
			if last, _ := Active(tc.b, got.Add(-time.Second)); last != before {
				t.Fatalf("Active changed before %s", got)
			}
		})
	}
}
