// Package batcher decides when a provisioning batch is complete.
//
// Pending pods arrive one by one, but launching a node per pod would be slow
// and wasteful: the solver packs best when it sees every pod of a scale-up at
// once. A Window collects pod keys (de-duplicated by UID) and closes when no
// new key arrived for the idle duration, or when the maximum duration has
// passed since the first key, whichever comes first.
//
// The Window is pure and clock-driven: callers pass "now" in, so the
// controller (wall clock) and the simulator (virtual clock) share it. Batcher
// wraps a Window with a goroutine-safe Trigger/Wait pair for the controller.
//
// This package must not import client-go clients, controller-runtime or the
// AWS SDK.
package batcher
