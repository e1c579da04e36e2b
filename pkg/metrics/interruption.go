package metrics

import "github.com/prometheus/client_golang/prometheus"

// Label names of the interruption metrics (LabelInstanceType is shared).
const (
	LabelKind   = "kind"
	LabelAction = "action"
	LabelZone   = "zone"
)

// Interruption holds the interruption handler's collectors.
type Interruption struct {
	// MessagesReceived, MessagesDeleted count queue messages by kind
	// (pkg/interruption/messages.Kind, "ignored" included).
	MessagesReceived *prometheus.CounterVec
	MessagesDeleted  *prometheus.CounterVec
	// MessagesIgnored counts messages that asked for nothing, by reason
	// (malformed, unknown_event, not_actionable, not_managed).
	MessagesIgnored *prometheus.CounterVec
	// MessageErrors counts messages left on the queue for redelivery
	// because their action could not be recorded, by kind.
	MessageErrors *prometheus.CounterVec
	// Actions counts what notices did to NodeClaims, by kind and action
	// (mark, delete, none).
	Actions *prometheus.CounterVec
	// Interruptions counts notices that disrupted a node, per NodePool and
	// spot pool (instance type, zone, capacity type).
	Interruptions *prometheus.CounterVec
	// QueueReady is 1 while the queue answers, 0 while it is missing or
	// refused (QueueErrors says why).
	QueueReady  prometheus.Gauge
	QueueErrors *prometheus.CounterVec
	// Latencies from the notice's receipt: node tainted, replacement
	// planned for every pod, node drained.
	// MessageAge is how long a message waited in the queue (SQS
	// SentTimestamp) before the controller received it.
	MessageAge         prometheus.Histogram
	TaintLatency       prometheus.Histogram
	ReplacementLatency prometheus.Histogram
	DrainLatency       prometheus.Histogram
}

func newInterruption() Interruption {
	latency := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "interruption", Name: name, Help: help,
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600},
		})
	}
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "interruption", Name: name, Help: help}, labels)
	}
	return Interruption{
		MessagesReceived: vec("messages_received_total", "Interruption queue messages received, by kind.", LabelKind),
		MessagesDeleted:  vec("messages_deleted_total", "Interruption queue messages deleted after their action was recorded, by kind.", LabelKind),
		MessagesIgnored:  vec("messages_ignored_total", "Interruption queue messages that asked for nothing, by reason.", LabelReason),
		MessageErrors:    vec("message_errors_total", "Interruption queue messages left for redelivery because their action failed, by kind.", LabelKind),
		Actions:          vec("actions_total", "What interruption notices did to NodeClaims, by kind and action.", LabelKind, LabelAction),
		Interruptions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "interruptions_total",
			Help: "Nodes disrupted by an interruption notice, per NodePool and spot pool."},
			[]string{LabelNodePool, LabelKind, LabelCapacityType, LabelInstanceType, LabelZone}),
		QueueReady: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "interruption", Name: "queue_ready",
			Help: "1 while the interruption queue answers, 0 while it is missing or access is denied."}),
		QueueErrors:        vec("queue_errors_total", "Failed interruption queue calls, by error class.", LabelError),
		MessageAge:         latency("message_age_seconds", "How long an interruption message waited in the queue (from its SQS SentTimestamp) before the controller received it."),
		TaintLatency:       latency("taint_duration_seconds", "From receiving a notice to the node's disrupted taint."),
		ReplacementLatency: latency("replacement_duration_seconds", "From receiving a notice to a planned place (a replacement or other room) for every pod of the node."),
		DrainLatency:       latency("drain_duration_seconds", "From receiving a notice to the node drained of the pods that move."),
	}
}

func (i Interruption) collectors() []prometheus.Collector {
	return []prometheus.Collector{i.MessagesReceived, i.MessagesDeleted, i.MessagesIgnored, i.MessageErrors, i.Actions,
		i.Interruptions, i.QueueReady, i.QueueErrors, i.MessageAge, i.TaintLatency, i.ReplacementLatency, i.DrainLatency}
}
