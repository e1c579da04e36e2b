package batch

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

func TestBatcherMergesAndSplits(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		keys      []string
		wantCalls int
	}{
		{name: "same key merges", opts: Options{Idle: 50 * time.Millisecond, Max: time.Second}, keys: []string{"a", "a", "a", "a"}, wantCalls: 1},
		{name: "different keys stay apart", opts: Options{Idle: 50 * time.Millisecond, Max: time.Second}, keys: []string{"a", "b", "a", "b"}, wantCalls: 2},
		{name: "max items splits", opts: Options{Idle: 50 * time.Millisecond, Max: time.Second, MaxItems: 2}, keys: []string{"a", "a", "a", "a"}, wantCalls: 2},
		{name: "batching off", opts: Options{}, keys: []string{"a", "a", "a"}, wantCalls: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			b := New(clock.RealClock{}, tt.opts, func(_ context.Context, key string, items []int) []Result[string] {
				calls.Add(1)
				out := make([]Result[string], len(items))
				for i, it := range items {
					out[i] = Result[string]{Out: key + string(rune('0'+it))}
				}
				return out
			})
			var wg sync.WaitGroup
			got := make([]string, len(tt.keys))
			start := make(chan struct{})
			for i, k := range tt.keys {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					out, err := b.Add(context.Background(), k, i)
					if err != nil {
						t.Error(err)
					}
					got[i] = out
				}()
			}
			close(start)
			wg.Wait()
			for i, k := range tt.keys {
				if want := k + string(rune('0'+i)); got[i] != want {
					t.Errorf("caller %d got %q, want %q", i, got[i], want)
				}
			}
			if int(calls.Load()) != tt.wantCalls {
				t.Errorf("exec calls = %d, want %d", calls.Load(), tt.wantCalls)
			}
		})
	}
}

func TestBatcherShortResultsBecomeErrors(t *testing.T) {
	b := New(clock.RealClock{}, Options{}, func(context.Context, string, []int) []Result[int] { return nil })
	if _, err := b.Add(context.Background(), "k", 1); err == nil {
		t.Error("want an error when exec returns too few results")
	}
}

func TestBatcherCallerCancel(t *testing.T) {
	release := make(chan struct{})
	b := New(clock.RealClock{}, Options{Idle: 10 * time.Millisecond, Max: time.Second}, func(context.Context, string, []int) []Result[int] {
		<-release
		return []Result[int]{{Out: 1}}
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Add(ctx, "k", 1); err == nil {
		t.Error("want the context error")
	}
	close(release)
}
