// Package nodepool keeps each NodePool's status true: the resources and node
// count it has launched (what its limits are checked against), and its
// ValidationSucceeded, NodeClassReady and Ready conditions, the last carrying
// the node class's own reason so a user sees why nothing launches. It also
// exports usage, limits and cost as metrics.
//
// It imports controller-runtime; the condition math is pkg/lifecycle's.
package nodepool
