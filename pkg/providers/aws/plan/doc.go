// Package plan decides what one NodeClaim's launch asks EC2 for: which
// (instance type, zone, subnet) options, bought as spot or on-demand, in
// what order. It is the pure half of the AWS provider's Create.
//
// The filters run in this order: offerings compatible with the claim's
// requirements, available (not ICE-marked), in a zone with a subnet, on a
// type whose allocatable fits the claim's requests; exotic types (GPU,
// accelerator, bare metal) dropped unless nothing else is left; spot
// offerings priced above the cheapest compatible on-demand offering
// dropped; then spot if any spot option remains and the claim allows it,
// else on-demand; options ordered by price × interruption risk (spot
// offerings rated by catalog.WithSpotRisk; plain price when unrated and for
// on-demand) and truncated to the override limit (60). Spot offerings above
// a pool's risk ceiling arrive marked unavailable and are filtered with the
// ICE-marked ones.
//
// This package is pure: it must not import the AWS SDK, client-go clients
// or controller-runtime.
package plan
