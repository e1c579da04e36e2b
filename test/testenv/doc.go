// Package testenv is the shared test bed of every integration test: a real
// kube-apiserver and etcd (built from source by tools/build.sh, never
// downloaded) with Nodesmith's CRDs installed, started once per test binary
// from TestMain.
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) {
//		os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Env) error { env = e; return nil }))
//	}
//
// Binaries come from KUBEBUILDER_ASSETS, or else from the folder
// `tools/build.sh --path k8s` prints. When they are missing the test binary
// fails and says to run `make tools`: an integration test that silently skips
// is a test that cannot fail.
//
// The apiserver runs with envtest's flags: --authorization-mode=RBAC (tests
// act as system:masters), --service-cluster-ip-range=10.0.0.0/24,
// --allow-privileged=true, a random secure port on 127.0.0.1, its own certs
// and service-account keys, and the default admission chain minus
// ServiceAccount (--disable-admission-plugins=ServiceAccount: nothing creates
// default ServiceAccounts without kube-controller-manager). So pods need no
// ServiceAccount, but Deployments make no pods, namespaces never finish
// deleting, and new Nodes keep the not-ready taint (TaintNodesByCondition).
//
// An end-to-end lab sets Options.FullAdmission (the real admission chain) and
// starts StartControllerManager and StartScheduler next to it, which turns
// the apiserver into a small but real control plane: default ServiceAccounts
// appear, Deployments run, the scheduler binds pods, and once something
// (KWOK) keeps a Node Ready its not-ready taint is removed. Extra apiserver
// flags go in Options.APIServerFlags.
//
// This package is test support only: it may import controller-runtime's
// envtest and client-go, and nothing from Nodesmith but the API types.
package testenv
