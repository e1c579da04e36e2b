// Package batch merges identical requests that arrive close together into
// one call and splits the results back to each caller.
//
// A batch opens with its first request and closes when no new request has
// joined for the idle window, when it has been open for the max window, or
// when it holds MaxItems requests. The CreateFleet batcher uses idle 35ms
// and max 1s: a burst of claims for the same pool and settings becomes one
// CreateFleet with a larger target capacity.
//
// Time comes from an injected clock. This package is pure: it must not
// import the AWS SDK, client-go clients or controller-runtime.
package batch
