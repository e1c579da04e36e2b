// Package userdata renders the user data that makes an instance join the
// cluster as a Node with the right labels and taints, and parses it back.
//
// AL2023 gets a MIME multipart document with a nodeadm NodeConfig
// (node.eks.aws/v1alpha1) carrying the cluster name, endpoint and CA, and
// the labels and taints as the kubelet flags --node-labels and
// --register-with-taints; Bottlerocket gets TOML settings; Custom images get
// the node class's user data untouched. Parse is the inverse the simulator
// and the e2e bridge use to register a Node as the kubelet would.
//
// Output is deterministic (sorted labels and taints) because the launch
// template name is a hash of it: equal inputs must reuse one template.
//
// This package is pure: it must not import the AWS SDK, client-go clients
// or controller-runtime.
package userdata
