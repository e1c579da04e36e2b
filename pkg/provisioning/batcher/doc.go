// Package batcher decides when a provisioning batch is complete.
//
// Pending pods arrive one by one, but launching a node per pod would be slow
// and wasteful: the solver packs best when it sees every pod of a scale-up at
// once. A Window collects pod keys (de-duplicated by UID) and closes when no
// new key arrived for the idle duration, or when the maximum duration has
// passed since the first key, whichever comes first.
//
// The Window is pure and clock-driven: callers pass "now" in. The
// provisioner (pkg/controllers/provisioner) holds one behind a mutex and,
// as an operator singleton, asks to run again at the window's deadline.
//
// This package must not import client-go clients, controller-runtime or the
// AWS SDK.
package batcher
