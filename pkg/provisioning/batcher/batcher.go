package batcher

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Batcher is the goroutine-safe shell around a Window used by the controller:
// watch handlers call Trigger, the provisioning loop calls Wait.
type Batcher struct {
	clk clock.Clock

	mu     sync.Mutex
	window *Window
	// kick wakes Wait when a key arrives; buffered so Trigger never blocks.
	kick chan struct{}
}

// New returns a Batcher with the given idle and max durations.
func New(clk clock.Clock, idle, max time.Duration) *Batcher {
	return &Batcher{clk: clk, window: NewWindow(idle, max), kick: make(chan struct{}, 1)}
}

// Trigger adds key (a pod UID) to the current window.
func (b *Batcher) Trigger(key string) {
	b.mu.Lock()
	b.window.Add(b.clk.Now(), key)
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Wait blocks until the window is due and returns its keys, or returns nil
// when ctx ends.
func (b *Batcher) Wait(ctx context.Context) []string {
	for {
		b.mu.Lock()
		now := b.clk.Now()
		if b.window.Due(now) {
			keys := b.window.Flush()
			b.mu.Unlock()
			return keys
		}
		deadline, ok := b.window.NextDeadline()
		b.mu.Unlock()

		var timer clock.Timer
		var fire <-chan time.Time
		if ok {
			timer = b.clk.NewTimer(deadline.Sub(now))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			stop(timer)
			return nil
		case <-b.kick:
		case <-fire:
		}
		stop(timer)
	}
}

func stop(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
}
