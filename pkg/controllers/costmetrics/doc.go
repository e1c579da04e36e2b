// Package costmetrics is the singleton that exports the fleet's cost metrics:
// nodesmith_cost_dollars_per_hour by NodePool, capacity type and instance
// type (every live NodeClaim's status.price), and
// nodesmith_cost_namespace_dollars_per_hour and
// nodesmith_cost_idle_dollars_per_hour, the requests-weighted split of the
// same dollars. Each step reads one cluster snapshot and adds it up with
// pkg/cost, the code `nodesmith plan` prints its current figures with.
//
// It must not import the AWS SDK: prices come from the claims.
package costmetrics
