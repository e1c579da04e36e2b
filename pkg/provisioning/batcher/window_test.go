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
		quiet  bool
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
		{name: "one key, before idle", idle: time.Second, max: 10 * time.Second, adds: []add{{0, "a", false, false}}, checkMs: 999, wantDue: false, wantDeadline: 1000, wantKeys: []string{"a"}},
		{name: "one key, at idle", idle: time.Second, max: 10 * time.Second, adds: []add{{0, "a", false, false}}, checkMs: 1000, wantDue: true, wantDeadline: 1000, wantKeys: []string{"a"}},
		{name: "new key extends idle", idle: time.Second, max: 10 * time.Second, adds: []add{{0, "a", false, false}, {800, "b", false, false}}, checkMs: 1500, wantDue: false, wantDeadline: 1800, wantKeys: []string{"a", "b"}},
		{name: "duplicate key does not extend idle", idle: time.Second, max: 10 * time.Second, adds: []add{{0, "a", false, false}, {800, "a", false, false}}, checkMs: 1000, wantDue: true, wantDeadline: 1000, wantKeys: []string{"a"}},
		{name: "steady trickle closes at max", idle: time.Second, max: 3 * time.Second,
			adds:    []add{{0, "a", false, false}, {900, "b", false, false}, {1800, "c", false, false}, {2700, "d", false, false}},
			checkMs: 3000, wantDue: true, wantDeadline: 3000, wantKeys: []string{"a", "b", "c", "d"}},
		{name: "defaults for zero durations", adds: []add{{0, "a", false, false}}, checkMs: 999, wantDue: false, wantDeadline: 1000, wantKeys: []string{"a"}},
		{name: "an expedited key closes the window with what it holds", idle: time.Second, max: 10 * time.Second,
			adds: []add{{0, "a", false, false}, {300, "b", true, false}}, checkMs: 300, wantDue: true, wantDeadline: 300, wantKeys: []string{"a", "b"}},
		{name: "keys after an expedited one do not hold the window open", idle: time.Second, max: 10 * time.Second,
			adds: []add{{0, "a", true, false}, {200, "b", false, false}, {400, "c", true, false}}, checkMs: 400, wantDue: true, wantDeadline: 0, wantKeys: []string{"a", "b", "c"}},
		{name: "a quiet key does not extend idle", idle: time.Second, max: 10 * time.Second,
			adds:    []add{{ms: 0, key: "a"}, {ms: 800, key: "n1", quiet: true}, {ms: 900, key: "n2", quiet: true}},
			checkMs: 1000, wantDue: true, wantDeadline: 1000, wantKeys: []string{"a", "n1", "n2"}},
		{name: "quiet keys alone close idle after the first", idle: time.Second, max: 10 * time.Second,
			adds:    []add{{ms: 0, key: "n1", quiet: true}, {ms: 700, key: "n2", quiet: true}},
			checkMs: 1000, wantDue: true, wantDeadline: 1000, wantKeys: []string{"n1", "n2"}},
		{name: "a loud key after quiet ones extends idle", idle: time.Second, max: 10 * time.Second,
			adds:    []add{{ms: 0, key: "n1", quiet: true}, {ms: 600, key: "a"}},
			checkMs: 1000, wantDue: false, wantDeadline: 1600, wantKeys: []string{"n1", "a"}},
		{name: "a quiet key turning loud extends idle once", idle: time.Second, max: 10 * time.Second,
			adds:    []add{{ms: 0, key: "a"}, {ms: 200, key: "n1", quiet: true}, {ms: 700, key: "n1"}, {ms: 900, key: "n1"}, {ms: 950, key: "n1", quiet: true}},
			checkMs: 1600, wantDue: false, wantDeadline: 1700, wantKeys: []string{"a", "n1"}},
		{name: "quiet keys do not move the max deadline of loud ones", idle: time.Second, max: 3 * time.Second,
			adds:    []add{{ms: 0, key: "n1", quiet: true}, {ms: 900, key: "b"}, {ms: 1800, key: "c"}, {ms: 2700, key: "d"}},
			checkMs: 3000, wantDue: true, wantDeadline: 3000, wantKeys: []string{"n1", "b", "c", "d"}},
		{name: "max shorter than idle is raised to idle", idle: 2 * time.Second, max: time.Second, adds: []add{{0, "a", false, false}}, checkMs: 1500, wantDue: false, wantDeadline: 2000, wantKeys: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(tt.idle, tt.max)
			for _, a := range tt.adds {
				switch {
				case a.urgent:
					w.Expedite(at(a.ms), a.key)
				case a.quiet:
					w.AddQuiet(at(a.ms), a.key)
				default:
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
