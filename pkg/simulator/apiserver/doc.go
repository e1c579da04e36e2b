// Package apiserver is the simulator's Kubernetes API server: an in-memory,
// typed object store behind a controller-runtime client.Client, so the
// simulator runs Nodesmith's controllers unchanged.
//
// It keeps the API semantics the controllers rely on: resource versions and
// optimistic locking (Update, and merge patches that carry a
// resourceVersion), generation bumped on spec changes, finalizers and
// deletion timestamps, graceful deletion of bound pods (the simulated
// kubelet finishes it), status subresources (the main resource cannot write
// status, the status subresource cannot write anything else), JSON merge
// patches, label selectors, field indexes (client.FieldIndexer, so
// state.IndexFields registers the controller's own indexes), the eviction
// subresource (a PodDisruptionBudget check the caller supplies) and the
// binding subresource kube-scheduler uses. Names from generateName, UIDs
// and resource versions are counters, and lists come back sorted by
// namespace and name, so a run is repeatable.
//
// Every committed write is reported to the listeners in commit order (the
// simulator's stand-in for watches and informers). Listeners run after the
// write, outside the store's lock; they may read but must not write.
//
// controller-runtime's fake client does most of this, but it took 3.5 ms
// per create and 0.5 s per list of 10,000 pods on our 2-core machine
// (measured 2026-12-01), two orders of magnitude too slow for a
// 10,000-pod simulation in seconds; this store copies typed objects
// directly.
package apiserver
