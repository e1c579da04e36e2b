package batcher

import (
	"reflect"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type add struct {
		ms     int
		key    string
		urgent bool
	}
	tests := []struct {
		name         string
		idle, max    time.Duration
		adds         []add
		checkMs      int
		wantDue      bool
		wantDeadline int // ms after t0; -1 means no deadline
		wantKeys     []string
	}{
		{name: "empty window is never due", idle: time.Second, max: 10 * time.Second, checkMs: 60000, wantDue: false, wantDeadline: -1},
		{name: "one key, before idle", idle: time.Second, max: 10 * time.Second, adds: []add{{0, "a", false}}, checkMs: 999, wantDue: false, wantDeadline: 1000, wantKeys: []string{"a"}},
		{name: "one key, at idle", idle: time.Second, max: 10 * time.Second, adds: []add{{0, "a", false}}, checkMs: 1000, wantDue: true, wantDeadline: 1000, wantKeys: []string{"a"}},
		{name: "new key extends idle", idle: time.Second, max: 10 * time.Second, adds: []add{{0, "a", false}, {800, "b", false}}, checkMs: 1500, wantDue: false, wantDeadline: 1800, wantKeys: []string{"a", "b"}},
		{name: "duplicate key does not extend idle", idle: time.Second, max: 10 * time.Second, adds: []add{{0, "a", false}, {800, "a", false}}, checkMs: 1000, wantDue: true, wantDeadline: 1000, wantKeys: []string{"a"}},
		{name: "steady trickle closes at max", idle: time.Second, max: 3 * time.Second,
			adds:    []add{{0, "a", false}, {900, "b", false}, {1800, "c", false}, {2700, "d", false}},
			checkMs: 3000, wantDue: true, wantDeadline: 3000, wantKeys: []string{"a", "b", "c", "d"}},
		{name: "defaults for zero durations", adds: []add{{0, "a", false}}, checkMs: 999, wantDue: false, wantDeadline: 1000, wantKeys: []string{"a"}},
		{name: "an expedited key closes the window with what it holds", idle: time.Second, max: 10 * time.Second,
			adds: []add{{0, "a", false}, {300, "b", true}}, checkMs: 300, wantDue: true, wantDeadline: 300, wantKeys: []string{"a", "b"}},
		{name: "keys after an expedited one do not hold the window open", idle: time.Second, max: 10 * time.Second,
			adds: []add{{0, "a", true}, {200, "b", false}, {400, "c", true}}, checkMs: 400, wantDue: true, wantDeadline: 0, wantKeys: []string{"a", "b", "c"}},
		{name: "max shorter than idle is raised to idle", idle: 2 * time.Second, max: time.Second, adds: []add{{0, "a", false}}, checkMs: 1500, wantDue: false, wantDeadline: 2000, wantKeys: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(tt.idle, tt.max)
			for _, a := range tt.adds {
				if a.urgent {
					w.Expedite(at(a.ms), a.key)
				} else {
					w.Add(at(a.ms), a.key)
				}
			}
			if got := w.Due(at(tt.checkMs)); got != tt.wantDue {
				t.Errorf("Due(%dms) = %v, want %v", tt.checkMs, got, tt.wantDue)
			}
			d, ok := w.NextDeadline()
			if tt.wantDeadline < 0 {
				if ok {
					t.Errorf("NextDeadline = %v, want none", d)
				}
			} else if !ok || !d.Equal(at(tt.wantDeadline)) {
				t.Errorf("NextDeadline = %v (%v), want %v", d, ok, at(tt.wantDeadline))
			}
			if got := w.Flush(); !reflect.DeepEqual(got, tt.wantKeys) {
				t.Errorf("Flush = %v, want %v", got, tt.wantKeys)
			}
			if w.Len() != 0 || w.Due(at(100000)) {
				t.Errorf("window not empty after Flush: len %d", w.Len())
			}
		})
	}
}

func TestWindowAddReportsNewKeys(t *testing.T) {
	w := NewWindow(time.Second, 10*time.Second)
	t0 := time.Now()
	if !w.Add(t0, "a") || w.Add(t0, "a") || !w.Add(t0, "b") {
		t.Fatalf("Add did not report new keys correctly")
	}
	w.Flush()
	if !w.Add(t0, "a") {
		t.Fatalf("a key is new again after Flush")
	}
}
