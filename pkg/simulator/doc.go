// Package simulator replays a scenario in virtual time through Nodesmith's
// own controllers.
//
// A discrete-event loop advances a fake clock from event to event (ordered
// by time, then by insertion, so a run is deterministic). The controllers
// are the set cmd/controller registers with its manager (pkg/controllers.New:
// provisioner, NodeClaim lifecycle, termination with eviction and grace
// periods, the disruption planner and executor, garbage collection, NodePool
// and EC2NodeClass status, pod-event stamps, cost metrics, the interruption
// handler when a scenario turns it on) plus the AWS provider's catalog
// loops, run by pkg/simulator/driver on an in-memory API server
// (pkg/simulator/apiserver) with the same watches, predicates and
// reconcilers, one reconcile at a time in a fixed order. Launches go
// through the AWS CloudProvider (pkg/providers/aws) to the simulated AWS
// (pkg/fakeaws) with the real SDK, whose HTTP requests the simulated AWS
// serves in process on the loop's goroutine (fakeaws.InProcessClient): a
// socket would let net/http's goroutines and the wall clock fail and retry
// calls, and the same run would not always write the same timeline.
//
// The simulator plays only what is not Nodesmith: kube-scheduler
// (pkg/simulator/scheduler, the default profile's filters and scores,
// checked against the real one), the kubelets (registration, readiness,
// pod start and graceful termination), kube-controller-manager's
// disruption controller (PodDisruptionBudget status) and the eviction
// subresource's check of it, the ReplicaSet, Job, DaemonSet and KEDA
// controllers, the SQS consumers, and AWS's capacity, prices, boots and
// interruptions. No placement, launch or disruption policy lives here: if
// the simulator and the controller would decide differently, the seam
// between them is wrong, not the simulator.
//
// Subpackages: apiserver (the in-memory API server), driver (the
// controller-runtime stand-in), scheduler (kube-scheduler), scenario (the
// file format), keda (the KEDA scaling model) and output (CSV, chart,
// report).
package simulator
