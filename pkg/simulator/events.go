package simulator

import (
	"container/heap"
	"time"
)

// Event priorities at one instant: the world changes first, then the
// controllers react, and the sample is taken last so a timeline row shows
// the state after everything that happened at its time.
const (
	prioNormal = iota
	prioLate
	prioSample
)

type event struct {
	at   time.Duration // since the start of the run
	prio int
	seq  uint64
	fn   func()
}

// eventQueue is a min-heap ordered by (at, prio, seq).
type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return a.seq < b.seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// schedule runs fn at virtual time at (never before the current time).
func (s *Sim) schedule(at time.Duration, prio int, fn func()) {
	if at < s.now {
		at = s.now
	}
	s.seq++
	heap.Push(&s.events, &event{at: at, prio: prio, seq: s.seq, fn: fn})
}

// after runs fn d from now.
func (s *Sim) after(d time.Duration, fn func()) { s.schedule(s.now+d, prioNormal, fn) }
