// Package operator wires Nodesmith's controllers once, for two drivers.
//
// Every controller is declared as data: an event-driven Controller (the kind
// it reconciles, the other kinds it watches and how their events map to its
// requests, a predicate, its worker count) or a Singleton (a loop that runs
// one step and says when it wants the next). The manager in cmd/controller
// turns the declarations into controller-runtime controllers and runnables
// (Register, AddSingleton); the simulator (pkg/simulator) reads the same
// declarations and calls the same Reconcile methods on a virtual clock. So
// what a controller watches and does lives in one place, whichever driver
// runs it.
package operator
