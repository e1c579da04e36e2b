// Package integration checks what users hand to the API server: every
// example in examples/ is accepted and defaulted, invalid objects are refused
// with a message a person understands, `kubectl get` shows the printer
// columns, and the Helm chart renders into objects the API server accepts.
//
// All tests share one real kube-apiserver + etcd (test/testenv) started in
// TestMain. The package holds tests only.
package integration
