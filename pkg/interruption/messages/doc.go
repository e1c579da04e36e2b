// Package messages turns the bodies of SQS messages that EventBridge (or an
// SNS topic in between) delivers into typed interruption events: an EC2 spot
// interruption warning, an interruptible capacity reservation's instance
// interruption warning, a rebalance recommendation, an instance state change
// (stopping, stopped, shutting-down, terminated) or an AWS Health scheduled
// change for EC2, each with the instance ids it names and the time the
// instance is expected to go away.
//
// Anything else — malformed JSON, another event type, a state we do not act
// on, a Health event for another service — becomes a Message of kind
// KindIgnored whose Ignored field says why, so the caller can count it and
// delete it. Parse never panics and never returns an error: a message that
// cannot be understood now will not be understood on redelivery either.
//
// The package is pure: it must not import the AWS SDK, client-go clients or
// controller-runtime. The controller that reads the queue lives in
// pkg/controllers/interruption.
package messages
