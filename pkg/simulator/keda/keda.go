package keda

import (
	"fmt"
	"time"
)

// Config is the subset of a ScaledObject with an aws-sqs-queue trigger that
// changes the replica count.
type Config struct {
	// QueueLength is the target number of messages per replica (KEDA default 5).
	QueueLength int64
	// ActivationQueueLength: the scaler is active only when the metric is
	// strictly greater than this (KEDA default 0).
	ActivationQueueLength int64
	MinReplicas           int32
	MaxReplicas           int32
	// PollingInterval is how often KEDA reads the queue (default 30s).
	PollingInterval time.Duration
	// CooldownPeriod is how long after the last active poll KEDA scales to MinReplicas (default 300s).
	CooldownPeriod time.Duration
	// ScaleOnInFlight adds ApproximateNumberOfMessagesNotVisible to the metric (KEDA default true).
	ScaleOnInFlight bool
	// ScaleOnDelayed adds ApproximateNumberOfMessagesDelayed to the metric (KEDA default false).
	ScaleOnDelayed bool
}

// Validate reports a configuration KEDA would reject or that cannot scale.
func (c Config) Validate() error {
	switch {
	case c.QueueLength <= 0:
		return fmt.Errorf("queueLength must be positive, got %d", c.QueueLength)
	case c.MinReplicas < 0:
		return fmt.Errorf("minReplicas must not be negative, got %d", c.MinReplicas)
	case c.MaxReplicas < 1 || c.MaxReplicas < c.MinReplicas:
		return fmt.Errorf("maxReplicas must be at least 1 and at least minReplicas, got %d", c.MaxReplicas)
	case c.PollingInterval <= 0:
		return fmt.Errorf("pollingInterval must be positive, got %s", c.PollingInterval)
	case c.CooldownPeriod < 0:
		return fmt.Errorf("cooldownPeriod must not be negative, got %s", c.CooldownPeriod)
	}
	return nil
}

// Metrics are the queue attributes of one GetQueueAttributes call.
type Metrics struct {
	Visible  int64 // ApproximateNumberOfMessages
	InFlight int64 // ApproximateNumberOfMessagesNotVisible
	Delayed  int64 // ApproximateNumberOfMessagesDelayed
}

// State is what the scaler remembers between polls.
type State struct {
	Replicas int32
	// LastActive is the time of the last poll that found the scaler active;
	// zero when it never was.
	LastActive time.Time
}

// Metric is the value the scaler reports for m.
func (c Config) Metric(m Metrics) int64 {
	v := m.Visible
	if c.ScaleOnInFlight {
		v += m.InFlight
	}
	if c.ScaleOnDelayed {
		v += m.Delayed
	}
	return v
}

// Poll is one polling cycle at now: it returns the replica count the
// workload should have and the state to pass to the next poll.
//
// While the metric is above the activation threshold the HPA rule applies:
// ceil(metric / queueLength) bounded by [max(1, min), max]. When it is not,
// KEDA leaves the workload to the HPA (which never goes below one replica)
// until cooldownPeriod has passed since the last active poll, then scales it
// to minReplicas. The HPA's 10% tolerance and scale-down stabilization
// window are not modelled: replicas follow the rule on every poll.
func (c Config) Poll(m Metrics, s State, now time.Time) State {
	metric := c.Metric(m)
	hpaMin := max(c.MinReplicas, 1)
	if metric > c.ActivationQueueLength {
		s.LastActive = now
		s.Replicas = clamp(ceilDiv(metric, c.QueueLength), hpaMin, c.MaxReplicas)
		return s
	}
	if s.Replicas <= c.MinReplicas {
		s.Replicas = c.MinReplicas
		return s
	}
	if s.LastActive.IsZero() || now.Sub(s.LastActive) >= c.CooldownPeriod {
		s.Replicas = c.MinReplicas
		return s
	}
	s.Replicas = clamp(ceilDiv(metric, c.QueueLength), hpaMin, c.MaxReplicas)
	return s
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func clamp(v int64, lo, hi int32) int32 {
	if v < int64(lo) {
		return lo
	}
	if v > int64(hi) {
		return hi
	}
	return int32(v)
}
