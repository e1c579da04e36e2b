// Package cost turns what a fleet runs into $/h figures: by NodePool,
// capacity type and instance type (Sum, Claims), and each namespace's share
// of the nodes its pods request (Share, Fleet). The controller's cost
// metrics (pkg/controllers/cost), `nodesmith plan` and `nodesmith simulate`
// all add up through here, so the three print the same figures for the
// same fleet.
//
// A NodeClaim's price is its status.price: what the instance cost per hour
// at launch. A namespace's share of a node is the node's price times the
// mean, over cpu and memory, of the fraction of the node's allocatable its
// pods request; what no pod requests is the node's idle cost.
//
// The package is pure: it imports no client-go client, no controller-runtime
// and no AWS SDK.
package cost
