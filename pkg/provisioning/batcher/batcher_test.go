package batcher

import (
	"context"
	"reflect"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBatcherWaitReturnsAfterIdle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := New(clk, time.Second, 10*time.Second)
	got := make(chan []string, 1)
	go func() { got <- b.Wait(context.Background()) }()

	b.Trigger("a")
	b.Trigger("b")
	b.Trigger("a")
	// Wait until the waiter has armed its idle timer, then step past it.
	waitForTimer(t, clk)
	clk.Step(time.Second)

	select {
	case keys := <-got:
		if !reflect.DeepEqual(keys, []string{"a", "b"}) {
			t.Fatalf("Wait = %v, want [a b]", keys)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the idle duration")
	}
}

func TestBatcherWaitEndsWithContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := New(clk, time.Second, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	b.Trigger("a")
	cancel()
	if keys := b.Wait(ctx); keys != nil {
		t.Fatalf("Wait after cancel = %v, want nil", keys)
	}
}

func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the batcher never armed a timer")
		}
		time.Sleep(time.Millisecond)
	}
}
