package batch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Options are the batch windows. Idle zero turns batching off: every
// request runs alone, at once (what a simulator on a stepped clock wants).
type Options struct {
	Idle     time.Duration
	Max      time.Duration
	MaxItems int
}

// Result is one caller's share of a batch's outcome.
type Result[Out any] struct {
	Out Out
	Err error
}

// ExecFunc runs one batch and returns exactly one result per input, in order.
type ExecFunc[K comparable, In, Out any] func(ctx context.Context, key K, items []In) []Result[Out]

// Batcher merges requests with equal keys.
type Batcher[K comparable, In, Out any] struct {
	clock clock.Clock
	opts  Options
	exec  ExecFunc[K, In, Out]

	mu      sync.Mutex
	buckets map[K]*bucket[In, Out]
}

type pending[In, Out any] struct {
	in  In
	out chan Result[Out]
}

type bucket[In, Out any] struct {
	ctx   context.Context
	items []pending[In, Out]
	added chan struct{}
}

// New returns a batcher that runs exec for each closed batch.
func New[K comparable, In, Out any](clk clock.Clock, opts Options, exec ExecFunc[K, In, Out]) *Batcher[K, In, Out] {
	if opts.MaxItems <= 0 {
		opts.MaxItems = 1000
	}
	if opts.Max < opts.Idle {
		opts.Max = opts.Idle
	}
	return &Batcher[K, In, Out]{clock: clk, opts: opts, exec: exec, buckets: map[K]*bucket[In, Out]{}}
}

// Add queues in under key and waits for its batch's result.
func (b *Batcher[K, In, Out]) Add(ctx context.Context, key K, in In) (Out, error) {
	if b.opts.Idle <= 0 {
		r := b.run(ctx, key, []In{in})
		return r[0].Out, r[0].Err
	}
	out := make(chan Result[Out], 1)
	b.mu.Lock()
	bk, ok := b.buckets[key]
	if !ok {
		// The batch outlives any one caller's cancellation: the others still wait on it.
		bk = &bucket[In, Out]{ctx: context.WithoutCancel(ctx), added: make(chan struct{}, 1)}
		b.buckets[key] = bk
		go b.wait(key, bk)
	}
	bk.items = append(bk.items, pending[In, Out]{in: in, out: out})
	full := len(bk.items) >= b.opts.MaxItems
	if full {
		delete(b.buckets, key)
	}
	b.mu.Unlock()
	select {
	case bk.added <- struct{}{}:
	default:
	}
	select {
	case r := <-out:
		return r.Out, r.Err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

func (b *Batcher[K, In, Out]) wait(key K, bk *bucket[In, Out]) {
	idle := b.clock.NewTimer(b.opts.Idle)
	deadline := b.clock.NewTimer(b.opts.Max)
	defer idle.Stop()
	defer deadline.Stop()
wait:
	for {
		select {
		case <-bk.added:
			b.mu.Lock()
			full := len(bk.items) >= b.opts.MaxItems
			b.mu.Unlock()
			if full {
				break wait
			}
			if !idle.Stop() {
				select {
				case <-idle.C():
				default:
				}
			}
			idle.Reset(b.opts.Idle)
		case <-idle.C():
			break wait
		case <-deadline.C():
			break wait
		}
	}
	b.mu.Lock()
	if b.buckets[key] == bk {
		delete(b.buckets, key)
	}
	items := bk.items
	b.mu.Unlock()
	ins := make([]In, len(items))
	for i, p := range items {
		ins[i] = p.in
	}
	results := b.run(bk.ctx, key, ins)
	for i, p := range items {
		p.out <- results[i]
	}
}

// run calls exec and guards the one-result-per-input contract.
func (b *Batcher[K, In, Out]) run(ctx context.Context, key K, ins []In) []Result[Out] {
	results := b.exec(ctx, key, ins)
	for len(results) < len(ins) {
		results = append(results, Result[Out]{Err: fmt.Errorf("batch returned %d results for %d requests", len(results), len(ins))})
	}
	return results
}
