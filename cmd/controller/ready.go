package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// readiness is /readyz: not ready until the informer caches have synced
// (a controller deciding on a half-filled cache would launch for pods that
// already have nodes) and the cloud provider has answered once (a replica
// that cannot reach AWS should not take the Lease in a rolling upgrade).
// Both replicas run it: the standby must be ready for the rollout to go on.
type readiness struct {
	mu       sync.Mutex
	synced   bool
	answered bool
	lastErr  error
}

// Check is the healthz.Checker.
func (r *readiness) Check(*http.Request) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var missing []string
	if !r.synced {
		missing = append(missing, "the informer caches have not synced")
	}
	if !r.answered {
		why := "the cloud provider has not answered yet"
		if r.lastErr != nil {
			why += fmt.Sprintf(" (last error: %v)", r.lastErr)
		}
		missing = append(missing, why)
	}
	if len(missing) > 0 {
		return errors.New(strings.Join(missing, "; "))
	}
	return nil
}

// cacheSyncer is the manager's cache as the probe needs it.
type cacheSyncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// readinessProbe is the manager Runnable that fills readiness: it waits for
// the caches, then asks the cloud until it answers, backing off to maxDelay.
type readinessProbe struct {
	r        *readiness
	cache    cacheSyncer
	ping     func(context.Context) error
	clk      clock.Clock
	delay    time.Duration
	maxDelay time.Duration
}

// NeedLeaderElection is false: every replica reports its own readiness.
func (p *readinessProbe) NeedLeaderElection() bool { return false }

// Start runs until the cloud answered or ctx ends.
func (p *readinessProbe) Start(ctx context.Context) error {
	if !p.cache.WaitForCacheSync(ctx) {
		return nil // stopping before the caches synced
	}
	p.r.mu.Lock()
	p.r.synced = true
	p.r.mu.Unlock()
	delay := p.delay
	for {
		err := p.ping(ctx)
		p.r.mu.Lock()
		p.r.answered, p.r.lastErr = err == nil, err
		p.r.mu.Unlock()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.clk.After(delay):
		}
		delay = min(2*delay, p.maxDelay)
	}
}
