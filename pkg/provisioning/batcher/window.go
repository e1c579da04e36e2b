package batcher

import "time"

// Defaults match the --batch-idle-duration and --batch-max-duration flags.
const (
	DefaultIdle = time.Second
	DefaultMax  = 10 * time.Second
)

// Window is one batching window. The zero value is not usable: build it with
// NewWindow. A Window is not safe for concurrent use; Batcher adds locking.
type Window struct {
	idle, max time.Duration

	// seen holds every key; the value is whether it arrived loud (Add).
	seen  map[string]bool
	keys  []string
	first time.Time
	last  time.Time
	// urgentAt, when set, closes the window at once (see Expedite).
	urgentAt time.Time
}

// NewWindow returns an empty window that closes after idle without a new key
// or after max since the first key. Non-positive durations fall back to the
// defaults, and max is never shorter than idle.
func NewWindow(idle, max time.Duration) *Window {
	if idle <= 0 {
		idle = DefaultIdle
	}
	if max <= 0 {
		max = DefaultMax
	}
	if max < idle {
		max = idle
	}
	return &Window{idle: idle, max: max, seen: map[string]bool{}}
}

// Add records key at now and reports whether it was new to this window. A
// repeated key does not extend the idle timer: a pod that kube-scheduler
// re-marks Unschedulable every few seconds must not keep a batch open forever.
func (w *Window) Add(now time.Time, key string) bool {
	loud, ok := w.seen[key]
	if ok && loud {
		return false
	}
	if !ok {
		w.append(now, key)
	}
	w.seen[key] = true
	w.last = now
	return !ok
}

// AddQuiet records key without extending the idle timer: a pod already
// planned onto capacity on its way (nominated) is re-checked by the next
// cycle, but the 500 pods of a running burst that kube-scheduler re-marks
// Unschedulable while their nodes boot must not hold the window open for a
// pod that just arrived. A window of quiet keys alone closes idle after its
// first. Add of the same key later extends the timer as a new key does.
func (w *Window) AddQuiet(now time.Time, key string) bool {
	if _, ok := w.seen[key]; ok {
		return false
	}
	if len(w.keys) == 0 {
		w.last = now
	}
	w.append(now, key)
	w.seen[key] = false
	return true
}

func (w *Window) append(now time.Time, key string) {
	if len(w.keys) == 0 {
		w.first = now
	}
	w.keys = append(w.keys, key)
}

// Expedite adds key and closes the window now: a node is about to go
// away and its pods must be planned without waiting for the batch to
// settle. Keys already in the window go with it.
func (w *Window) Expedite(now time.Time, key string) {
	w.Add(now, key)
	if w.urgentAt.IsZero() {
		w.urgentAt = now
	}
}

// Len is the number of distinct keys in the window.
func (w *Window) Len() int { return len(w.keys) }

// Due reports whether the window holds keys and has closed at now.
func (w *Window) Due(now time.Time) bool {
	d, ok := w.NextDeadline()
	return ok && !now.Before(d)
}

// NextDeadline is when the window closes if no further key arrives; ok is
// false while the window is empty (it never closes on its own).
func (w *Window) NextDeadline() (deadline time.Time, ok bool) {
	if len(w.keys) == 0 {
		return time.Time{}, false
	}
	if !w.urgentAt.IsZero() {
		return w.urgentAt, true
	}
	idle := w.last.Add(w.idle)
	max := w.first.Add(w.max)
	if max.Before(idle) {
		return max, true
	}
	return idle, true
}

// Flush returns the keys in arrival order and empties the window.
func (w *Window) Flush() []string {
	keys := w.keys
	w.keys = nil
	w.seen = map[string]bool{}
	w.first, w.last, w.urgentAt = time.Time{}, time.Time{}, time.Time{}
	return keys
}
