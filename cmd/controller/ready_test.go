package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// gatedCache syncs when its channel closes.
type gatedCache struct{ synced chan struct{} }

func (c gatedCache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 2000 {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReadyzWaitsForCachesAndTheCloud: /readyz fails, saying why, until the
// caches have synced and then until the cloud has answered once; a failed
// answer is quoted and retried after the backoff.
func TestReadyzWaitsForCachesAndTheCloud(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	cache := gatedCache{synced: make(chan struct{})}
	var pings, fail atomic.Int32
	fail.Store(1)
	r := &readiness{}
	p := &readinessProbe{r: r, cache: cache, clk: clk, delay: time.Second, maxDelay: 30 * time.Second,
		ping: func(context.Context) error {
			pings.Add(1)
			if fail.Load() == 1 {
				return errors.New("UnauthorizedOperation: ec2:DescribeSubnets")
			}
			return nil
		}}
	if p.NeedLeaderElection() {
		t.Error("the probe must run on every replica, leader or not")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- p.Start(ctx) }()

	err := r.Check(nil)
	if err == nil || !strings.Contains(err.Error(), "caches have not synced") {
		t.Fatalf("before the sync: readyz %v, want it to name the caches", err)
	}
	close(cache.synced)
	waitFor(t, "the first ping", func() bool { return pings.Load() == 1 })
	waitFor(t, "the failed answer recorded", func() bool {
		err := r.Check(nil)
		return err != nil && strings.Contains(err.Error(), "UnauthorizedOperation") && !strings.Contains(err.Error(), "caches")
	})
	fail.Store(0)
	waitFor(t, "the probe waiting out its backoff", clk.HasWaiters)
	clk.Step(time.Second)
	waitFor(t, "ready", func() bool { return r.Check(nil) == nil })
	if err := <-done; err != nil {
		t.Errorf("Start = %v", err)
	}
	if n := pings.Load(); n != 2 {
		t.Errorf("pinged %d times, want 2 (one failure, one answer)", n)
	}
}
