// Package clusterinfo finds what the controller must know about the cluster
// it runs in before it can launch a node that joins it: the AWS region, the
// API server endpoint, the CA bundle and the service CIDR (nodeadm's
// NodeConfig needs all three) and the Kubernetes minor version (which names
// the SSM parameters of AMI aliases).
//
// A flag (or its environment variable) wins; what is not set is looked up:
// the region from IMDS, the endpoint, CA and CIDR from EKS DescribeCluster,
// the version from the API server. When a lookup fails the controller must
// not start: the error names the missing setting, the flag that sets it and
// the IAM permission the lookup needed, so the fix is one line of config.
//
// The package takes its sources as small interfaces (the EKS and IMDS SDK
// clients satisfy them) so tests run it against the simulated AWS. It must
// not import client-go clients or controller-runtime.
package clusterinfo
