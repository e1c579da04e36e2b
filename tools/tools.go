//go:build tools

// Package tools pins the Kubernetes control-plane components that the test
// bed builds from source. It is a separate module so that the product's
// go.mod never carries k8s.io/kubernetes.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
