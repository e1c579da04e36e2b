// Package lifecycle holds the pure rules of a node's life: which pods ask for
// new capacity (IsProvisionable), when a NodeClaim has launched, registered,
// initialized or timed out (Liveness, Initialized), the order and conditions
// under which a draining node's pods are evicted (DrainOrder, DoNotDisrupt,
// TerminationDeadline), when a node is empty and since when (IsEmpty,
// EmptySince), and the status conditions the controllers write. Budgets
// live in pkg/disruption/budget and the disruption decisions (emptiness
// included) in pkg/disruption.
//
// Every function takes plain API values and "now"; nothing here reads the API
// server or a clock. The controllers in pkg/controllers apply these rules to
// live objects and the simulator applies them in virtual time.
//
// This package must not import client-go clients, controller-runtime or the
// AWS SDK.
package lifecycle
