// Package cloudprovider is the one interface between Nodesmith's controllers
// and a cloud: create an instance for a NodeClaim, delete it, get or list the
// instances, and tell what instance types and offerings can be launched.
//
// AWS (pkg/providers/aws) is one implementation; the simulator drives the
// same AWS implementation against the simulated AWS. The error contract is
// written on the interface: callers branch on IsInsufficientCapacity,
// IsNodeClaimNotFound, IsNodeClassNotReady, IsLaunchRejected and
// IsCloudUnavailable, never on message text. launch.go holds what makes
// Create idempotent across retries and restarts: the claim's launch attempt
// (raised by the caller only after a rejected launch) and its launch key.
package cloudprovider
