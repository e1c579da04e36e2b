// Package garbagecollection reconciles the cloud against the API: an instance
// tagged for this cluster that no NodeClaim accounts for, once older than a
// grace period, is terminated (a crash between launch and the claim's status
// update must not leak money); a launched NodeClaim whose instance vanished is
// deleted so its pods are planned again.
//
// It imports controller-runtime and the cloudprovider contract.
package garbagecollection
