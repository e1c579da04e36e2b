// Package garbagecollection reconciles the cloud against the API: an instance
// tagged for this cluster that no NodeClaim accounts for, once older than a
// grace period, is terminated (a crash between launch and the claim's status
// update must not leak money); a launched NodeClaim whose instance vanished is
// deleted so its pods are planned again. It acts only on answers: a pass
// whose listing failed (any page of it) terminates nothing, a claim is
// deleted only when the cloud said its instance is gone, and an unclaimed
// instance of a shared launch is kept while a claim it names waits.
//
// It imports controller-runtime and the cloudprovider contract.
package garbagecollection
