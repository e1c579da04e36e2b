package operator

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestEach(t *testing.T) {
	tests := []struct {
		name       string
		workers, n int
		wantOrder  bool // one worker: in order, on the caller's goroutine
	}{
		{name: "nothing", workers: 4, n: 0},
		{name: "one worker runs in order", workers: 1, n: 20, wantOrder: true},
		{name: "no workers set runs in order", workers: 0, n: 5, wantOrder: true},
		{name: "bounded parallel", workers: 3, n: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu            sync.Mutex
				order         []int
				running, peak atomic.Int32
			)
			Each(tt.workers, tt.n, func(i int) {
				now := running.Add(1)
				for {
					p := peak.Load()
					if now <= p || peak.CompareAndSwap(p, now) {
						break
					}
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				running.Add(-1)
			})
			if len(order) != tt.n {
				t.Fatalf("called %d times, want %d", len(order), tt.n)
			}
			seen := map[int]bool{}
			for k, i := range order {
				if seen[i] {
					t.Fatalf("index %d called twice", i)
				}
				seen[i] = true
				if tt.wantOrder && i != k {
					t.Fatalf("call %d was index %d: one worker must go in order", k, i)
				}
			}
			if limit := int32(max(tt.workers, 1)); peak.Load() > limit {
				t.Errorf("%d ran at once, limit %d", peak.Load(), limit)
			}
		})
	}
}
