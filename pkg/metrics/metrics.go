package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "nodesmith"

// Label names.
const (
	LabelNodePool = "nodepool"
	// LabelNodeClass, LabelReservationID and LabelReservationType name a
	// capacity reservation's series.
	LabelNodeClass       = "nodeclass"
	LabelReservationID   = "reservation_id"
	LabelReservationType = "reservation_type"
	LabelReason          = "reason"
	LabelCapacityType    = "capacity_type"
	LabelResource        = "resource"
	LabelMethod          = "method"
	LabelError           = "error"
	LabelInstanceType    = "instance_type"
	LabelNamespace       = "namespace"
	LabelDecision        = "decision"
	LabelService         = "service"
	LabelOperation       = "operation"
)

// Metrics holds every collector the controller updates.
type Metrics struct {
	SchedulingDuration prometheus.Histogram
	QueueDepth         prometheus.Gauge
	PodsPending        prometheus.Gauge
	PodsUnschedulable  prometheus.Gauge
	// PodsPendingOldest is the age of the oldest provisionable pending pod
	// at the last provisioning round, 0 when none was pending.
	PodsPendingOldest prometheus.Gauge

	NodeClaimsCreated     *prometheus.CounterVec
	NodeClaimsLaunched    *prometheus.CounterVec
	NodeClaimsRegistered  *prometheus.CounterVec
	NodeClaimsInitialized *prometheus.CounterVec
	NodeClaimsTerminated  *prometheus.CounterVec

	NodePoolUsage *prometheus.GaugeVec
	NodePoolLimit *prometheus.GaugeVec
	CostPerHour   *prometheus.GaugeVec
	CostNamespace *prometheus.GaugeVec
	CostIdle      prometheus.Gauge
	// CapacityReservationAvailable is what each capacity reservation a node
	// class selects had free when last read (EC2NodeClass
	// status.capacityReservations).
	CapacityReservationAvailable *prometheus.GaugeVec

	CloudCalls    *prometheus.CounterVec
	CloudErrors   *prometheus.CounterVec
	CloudDuration *prometheus.HistogramVec
	// CloudRetries counts the retries the cloud's SDK made of one API
	// operation, by why (throttled, server_error, timeout, connection, other).
	CloudRetries *prometheus.CounterVec

	Disruption   Disruption
	Interruption Interruption

	terminations terminations
}

// New builds the collectors and registers them on reg. It fails when reg
// already holds collectors with the same names.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		SchedulingDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "scheduler", Name: "scheduling_duration_seconds",
			Help:    "Time to gather a snapshot and solve one provisioning batch.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "scheduler", Name: "queue_depth",
			Help: "Pods in the provisioning batch being solved.",
		}),
		PodsPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "pods_pending",
			Help: "Provisionable pods seen in the last batch.",
		}),
		PodsUnschedulable: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "pods_unschedulable",
			Help: "Pods the last batch could place on no existing, in-flight or new node.",
		}),
		PodsPendingOldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "pods_pending_oldest_age_seconds",
			Help: "Age of the oldest provisionable pending pod at the last provisioning round (0: none pending).",
		}),
		NodeClaimsCreated: counter("nodeclaims_created_total", "NodeClaims created by the provisioner.", LabelNodePool, LabelReason),
		NodeClaimsLaunched: counter("nodeclaims_launched_total", "NodeClaims whose instance launched.",
			LabelNodePool, LabelCapacityType),
		NodeClaimsRegistered:  counter("nodeclaims_registered_total", "NodeClaims whose Node registered.", LabelNodePool),
		NodeClaimsInitialized: counter("nodeclaims_initialized_total", "NodeClaims whose Node became ready for work.", LabelNodePool),
		NodeClaimsTerminated: counter("nodeclaims_terminated_total", "NodeClaims whose instance was terminated and finalizer removed, by why they were deleted; orphan counts instances no claim owned.",
			LabelNodePool, LabelReason),
		NodePoolUsage: gauge("nodepool_usage", "Resources launched by a NodePool.", LabelNodePool, LabelResource),
		NodePoolLimit: gauge("nodepool_limit", "A NodePool's limits.", LabelNodePool, LabelResource),
		CostPerHour: gauge("cost_dollars_per_hour", "Launch price of the running and launching instances in USD per hour (NodeClaim status.price).",
			LabelNodePool, LabelCapacityType, LabelInstanceType),
		CostNamespace: gauge("cost_namespace_dollars_per_hour",
			"Each namespace's share of the fleet's USD per hour: per node, its price times the mean over cpu and memory of the fraction of allocatable the namespace's pods request.",
			LabelNamespace),
		CostIdle: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "cost_idle_dollars_per_hour",
			Help: "The fleet's USD per hour that no pod requests; with the namespaces' shares it adds up to the fleet."}),
		CapacityReservationAvailable: gauge("capacity_reservation_available_instances",
			"Instances a capacity reservation a node class selects had free when last read (0: used up).",
			LabelNodeClass, LabelReservationID, LabelReservationType, LabelInstanceType, LabelZone),
		CloudCalls:  counter("cloudprovider_calls_total", "Cloud provider calls.", LabelMethod),
		CloudErrors: counter("cloudprovider_errors_total", "Cloud provider calls that failed, by error class.", LabelMethod, LabelError),
		CloudDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "cloudprovider_duration_seconds",
			Help:    "Latency of cloud provider calls.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{LabelMethod}),
		CloudRetries: counter("cloud_api_retries_total", "Retries the cloud SDK's retryer made, by service, API operation and reason.",
			LabelService, LabelOperation, LabelReason),
		Interruption: newInterruption(),
	}
	m.Disruption = newDisruption()
	for _, c := range append([]prometheus.Collector{
		m.Disruption.Decisions, m.Disruption.Savings, m.Disruption.Candidates, m.Disruption.Skipped, m.Disruption.Allowed,
		m.Disruption.ValidationFailures, m.Disruption.Aborted, m.Disruption.ReturnsToSpot, m.Disruption.Repairs, m.Disruption.PlanDuration,
		m.SchedulingDuration, m.QueueDepth, m.PodsPending, m.PodsUnschedulable, m.PodsPendingOldest,
		m.NodeClaimsCreated, m.NodeClaimsLaunched, m.NodeClaimsRegistered, m.NodeClaimsInitialized, m.NodeClaimsTerminated,
		m.NodePoolUsage, m.NodePoolLimit, m.CostPerHour, m.CostNamespace, m.CostIdle, m.CapacityReservationAvailable, m.CloudCalls, m.CloudErrors, m.CloudDuration, m.CloudRetries,
	}, m.Interruption.collectors()...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// MustNewForTest returns collectors on a private registry.
func MustNewForTest() *Metrics {
	m, err := New(prometheus.NewRegistry())
	if err != nil {
		panic(err) // a private registry cannot hold duplicates
	}
	return m
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
}
