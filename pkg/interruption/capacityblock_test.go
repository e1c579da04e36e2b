package interruption

import (
	"testing"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestCapacityBlockMark(t *testing.T) {
	end := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		now      time.Time
		due      bool
		next     time.Time
		deadline time.Time
	}{
		{"hours before", end.Add(-3 * time.Hour), false, end.Add(-40 * time.Minute), time.Time{}},
		{"41 minutes before", end.Add(-41 * time.Minute), false, end.Add(-40 * time.Minute), time.Time{}},
		{"40 minutes before: marked, reclaimed at 30", end.Add(-40 * time.Minute), true, time.Time{}, end.Add(-30 * time.Minute)},
		{"after the reclaim, still marked", end.Add(-10 * time.Minute), true, time.Time{}, end.Add(-30 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, due, next := CapacityBlockMark(end, tt.now)
			if due != tt.due || !next.Equal(tt.next) || !m.Deadline.Equal(tt.deadline) {
				t.Fatalf("mark %+v due %v next %v; want due %v next %v deadline %v", m, due, next, tt.due, tt.next, tt.deadline)
			}
			if due && (m.Reason != nsv1.DisruptingReasonCapacityBlockExpiring || !m.Interrupted() || !IsInterruptionReason(m.Reason)) {
				t.Errorf("mark %+v is not an interruption", m)
			}
		})
	}
	if _, due, _ := CapacityBlockMark(time.Time{}, end); due {
		t.Error("a block without an end is due")
	}
}
