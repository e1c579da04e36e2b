// Package metrics defines Nodesmith's Prometheus collectors (prefix
// nodesmith_) and registers them on the registry the caller passes in — the
// controller passes controller-runtime's registry, tests a fresh one — so
// importing this package registers nothing by itself.
//
// It may import the Prometheus client and the cloudprovider contract (to
// instrument cloud calls); it must not import controller-runtime.
package metrics
