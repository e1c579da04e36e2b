// Package keda models how KEDA's aws-sqs-queue scaler (through the HPA it
// drives) turns queue attributes into a replica count, so the simulator's
// queue-driven workloads scale the way they would in a cluster.
//
// It is a model of someone else's controller, not Nodesmith policy: it is
// pure (plain values and times in, a replica count out) and imports neither
// the simulator nor any client.
package keda
