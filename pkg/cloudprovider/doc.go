// Package cloudprovider is the one interface between Nodesmith's controllers
// and a cloud: create an instance for a NodeClaim, delete it, get or list the
// instances, and tell what instance types and offerings can be launched.
//
// AWS (pkg/providers/aws) is one implementation; the simulator drives the
// same AWS implementation against the simulated AWS. The error contract is
// written on the interface: callers branch on IsInsufficientCapacity,
// IsNodeClaimNotFound and IsNodeClassNotReady, never on message text.
package cloudprovider
