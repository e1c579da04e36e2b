// Package whatif answers the questions the nodesmith CLI asks of a cluster
// snapshot, with the product's own decision code: what Nodesmith would
// launch for the cluster's pods (Plan), why one pod is or is not placed
// (ExplainPod) and where one node stands on removal (ExplainNode).
//
// It gathers the way the controller does — provisioning.PendingPods and
// BuildInput, scheduling.Solve, disruption.Compute — but reads a
// Snapshot file (snapshot.go: every object a decision reads, as written by
// `nodesmith snapshot`) and takes instance types from the embedded catalog,
// built for each pool's EC2NodeClass as the AWS provider builds them
// (zones of its resolved subnets, kubelet settings, root volume), instead
// of calling AWS. The cost figures come from pkg/cost, as the controller's
// metrics do.
//
// The package is pure: it imports no client-go client, no controller-runtime
// and no AWS SDK. pkg/kubesnapshot fills a Snapshot from a cluster;
// cmd/nodesmith prints the answers.
package whatif
