// Package perf runs Karpenter's performance suite (kubernetes-sigs/karpenter,
// test/suites/performance: the same pod counts, resource shapes and
// placement constraints) against Nodesmith's controller binary in a lab
// like test/e2e's: a real kube-apiserver, etcd, kube-scheduler and
// kube-controller-manager (test/testenv), KWOK playing every node's
// kubelet, the simulated AWS (pkg/fakeaws) on loopback, and a bridge that
// registers a Node when a simulated instance is running.
//
// Each scenario reports its time to done (every pod Running; for a
// disruption scenario, the disruption finished), the controller's P95 and
// peak resident memory, its CPU in cores averaged over the run, and the
// fleet's reserved CPU and memory (pod requests over node allocatable), and
// fails when Karpenter's own limit for that scenario is broken (their suite
// treats those limits as pass/fail). Our goal, a fifth of Karpenter's time
// and half its memory, is shown in the table, not asserted.
//
// `make test` runs the basic scale-out and its consolidation (1,000 → 700
// pods); `make perf` (build tag perf) runs every scenario, three times by
// default, and prints the table.
//
// Test-only package: no production code imports it.
package perf
