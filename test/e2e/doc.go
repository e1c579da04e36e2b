// Package e2e is the controller lab: the test bed of pkg/labkit — a real
// control plane (kube-apiserver, etcd, kube-scheduler and
// kube-controller-manager from test/testenv), the simulated AWS
// (pkg/fakeaws) served on loopback and enforcing examples/terraform's
// policy, KWOK playing the kubelet of every node, the bridge that registers
// a Node when a simulated instance boots and removes it when the instance
// terminates, and the real cmd/controller binary as a process with the
// chart's command line and RBAC — plus this package's request log and AWS
// fault injector.
//
// The scenarios run in order against one lab (TestLab): a 1,000-pod
// scale-up and scale-down, NodePool limits, spot capacity errors, a crash
// between CreateFleet and the status write, and a drain held by a PDB.
// Instances boot in 2 s here (EC2 takes tens of seconds) so the lab fits in
// CI time on two cores.
//
// The lab stops at its first failed step (later steps start from the state
// earlier ones leave and could only wait out their timeouts); run one on
// its own with -run 'TestLab/^<number>_'. TestMain prints a summary last —
// steps passed, failed, running and not run, and each step's time — and a
// watchdog ends the lab two minutes before go test's -timeout: it prints
// where the running step waits and the controller's log tail, stops the
// lab's processes and exits 1, so a stuck step is named rather than buried
// under a goroutine dump.
//
// Test-only package: no production code imports it.
package e2e
