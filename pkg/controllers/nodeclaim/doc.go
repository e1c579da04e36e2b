// Package nodeclaim reconciles a NodeClaim from creation to a node ready for
// work, one file per phase:
//
//   - launch.go: CloudProvider.Create, status filled from the instance
//     (Launched); insufficient capacity deletes the claim and releases its
//     pods to be planned again at once;
//   - limits.go: a pool that limits a resource launches within its turn (a
//     per-pool lock); when its limit cannot hold every claim's largest
//     option, one claim at a time, trimmed to the options that fit what its
//     launched capacity leaves, or refused (LimitReached) and its pods
//     released as after insufficient capacity;
//   - registration.go: the Node with the claim's providerID appears; it gets
//     the termination finalizer, the claim's labels and taints, and loses the
//     nodesmith.sh/unregistered taint (Registered);
//   - initialization.go: the Node is Ready, startup taints are gone, extended
//     resources are registered (Initialized);
//   - liveness.go: a claim that does not launch or register in time is deleted.
//
// The rules themselves live in pkg/lifecycle; deletion is the termination
// controller's job. This package imports controller-runtime and the
// cloudprovider contract, never a cloud SDK.
package nodeclaim
