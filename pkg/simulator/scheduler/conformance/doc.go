// Package conformance holds only a test: it runs the real kube-scheduler
// (v1.37, built by tools/build.sh) against a real kube-apiserver and checks
// that the model in pkg/simulator/scheduler binds every pod of a mixed
// sequence where the real one does, and words its failures the same. It is
// apart from the model so that the model's unit tests need no test bed.
package conformance
