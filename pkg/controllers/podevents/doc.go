// Package podevents stamps status.lastPodEventTime on a NodeClaim when the
// set of workload pods on its node changes: a pod bound to it, or one that
// left (deleted, terminating, finished). consolidateAfter is measured from
// that time (pkg/lifecycle.EmptySince), so it lives on the object, not in
// memory: after a leader change a node that just emptied still looks just
// emptied.
//
// The controller keeps a fingerprint of the pod set in the
// nodesmith.sh/pod-set annotation and compares it on every reconcile, so a
// missed event or a restart costs nothing: a change is seen whenever the
// claim is next reconciled. DaemonSet and static pods are not workload and
// do not count.
//
// It imports controller-runtime and is declared for pkg/operator.
package podevents
