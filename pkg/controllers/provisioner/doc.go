// Package provisioner turns pending pods into NodeClaims. A pod controller
// feeds provisionable pods (pkg/lifecycle.IsProvisionable: marked
// Unschedulable, or unjudged by the default scheduler for VerdictWait) into
// a batching window (pkg/provisioning/batcher); when the window closes the Provisioner
// gathers one snapshot from the cluster state, builds the solver's input
// with pkg/provisioning (PendingPods, BuildInput; the simulator runs the
// same functions), runs the pure solver
// (pkg/scheduling.Solve), nominates pods onto existing and in-flight
// capacity, creates the planned NodeClaims and launches them at once. Claims
// that hit insufficient capacity on every option are deleted and their pods
// planned again in the same cycle, against offerings the provider has
// since marked unavailable.
//
// It imports controller-runtime and the cloudprovider contract; it holds no
// placement policy of its own.
package provisioner
