// Package labkit is the local test bed in one place: a real kube-apiserver
// and etcd behind the readiness-gated API front (test/testenv),
// kube-scheduler and kube-controller-manager, KWOK playing every node's
// kubelet, the simulated AWS (pkg/fakeaws) on loopback — optionally
// authorizing every request against examples/terraform's controller policy
// —, a bridge that registers a Node when a simulated instance is running and
// removes it when the instance terminates, and the real cmd/controller
// binary started with the Helm chart's command line under the chart's RBAC
// (its ServiceAccount, impersonated).
//
// Three callers share it: the end-to-end lab (test/e2e), the performance
// lab (test/perf) and `nodesmith lab up` (cmd/nodesmith), which runs it in
// the background so anyone can try Nodesmith without an AWS account. A
// caller starts the bed with Start, adds its own objects (NodePools,
// workloads) and starts one or more controller processes with
// SpawnController; Stop ends everything.
//
// labkit is a shell for trying and testing, not part of the controller: it
// may import client-go, controller-runtime's envtest (through test/testenv)
// and the simulator's node builder; nothing in the product imports it but
// the `nodesmith lab` command.
package labkit
