// Package v1 holds the aws.nodesmith.sh/v1 API: EC2NodeClass, the AWS
// settings (subnets, security groups, AMIs, IAM, user data, kubelet) that a
// NodePool's nodes are launched with.
//
// This package imports only k8s.io/api and k8s.io/apimachinery.
//
// +kubebuilder:object:generate=true
// +groupName=aws.nodesmith.sh
package v1
