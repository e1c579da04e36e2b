package scenario

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
)

// Scenario is one simulation: a world, a cluster, workloads and events.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Seed makes the simulated AWS's random choices (which instance gets a
	// notice, tie-breaks) repeatable; the --seed flag overrides it.
	Seed int64 `json:"seed,omitempty"`
	// Duration is how much virtual time is simulated.
	Duration metav1.Duration `json:"duration"`
	// SampleInterval is the spacing of timeline rows (default 5s).
	SampleInterval metav1.Duration `json:"sampleInterval,omitempty"`

	World World `json:"world"`
	// Controller is how Nodesmith itself is configured (the chart's values).
	Controller Controller `json:"controller,omitempty"`

	NodePools   []nsv1.NodePool      `json:"nodePools"`
	NodeClasses []awsv1.EC2NodeClass `json:"nodeClasses"`
	// SystemNodes exist from t=0 and are not managed by Nodesmith (like a
	// managed node group running the system pods and the controller).
	SystemNodes []SystemNode       `json:"systemNodes,omitempty"`
	DaemonSets  []appsv1.DaemonSet `json:"daemonSets,omitempty"`
	// PodDisruptionBudgets limit how many matching pods an eviction may take
	// down at once (namespace default when unset), as the API server's
	// eviction subresource enforces them.
	PodDisruptionBudgets []policyv1.PodDisruptionBudget `json:"podDisruptionBudgets,omitempty"`
	// PodTemplates and CapacityBuffers (autoscaling.x-k8s.io) created at
	// t=0 (namespace default when unset).
	PodTemplates    []corev1.PodTemplate  `json:"podTemplates,omitempty"`
	CapacityBuffers []cbv1.CapacityBuffer `json:"capacityBuffers,omitempty"`
	// NodeOverlays and Commitments (nodesmith.sh/v1alpha1) created at t=0:
	// price and capacity overlays, Savings Plans and Reserved Instances. The
	// report counts what the commitments cost over the run and how much
	// on-demand they covered.
	NodeOverlays []nsv1alpha1.NodeOverlay `json:"nodeOverlays,omitempty"`
	Commitments  []nsv1alpha1.Commitment  `json:"commitments,omitempty"`
	// Storage for pods' volumes, created at t=0 (claims in namespace
	// default when unset): a pod template naming a claim gets its
	// volume's topology. Nothing provisions or binds volumes during the
	// run, so claims a pod should find bound name their volume here.
	PersistentVolumes      []corev1.PersistentVolume      `json:"persistentVolumes,omitempty"`
	PersistentVolumeClaims []corev1.PersistentVolumeClaim `json:"persistentVolumeClaims,omitempty"`
	StorageClasses         []storagev1.StorageClass       `json:"storageClasses,omitempty"`

	Queues       []Queue       `json:"queues,omitempty"`
	Deployments  []Deployment  `json:"deployments,omitempty"`
	QueueWorkers []QueueWorker `json:"queueWorkers,omitempty"`
	Jobs         []Job         `json:"jobs,omitempty"`

	Events []Event `json:"events,omitempty"`
}

// World is the simulated AWS account and the kubelet timings.
type World struct {
	// Region of the catalog (only us-east-1 ships with the binary).
	Region string   `json:"region,omitempty"`
	Zones  []string `json:"zones,omitempty"`
	// ClusterName tags the subnets and security groups the simulated AWS
	// creates and that the EC2NodeClasses select.
	ClusterName string `json:"clusterName,omitempty"`
	// DefaultCapacity is how many instances every (type, zone, capacity
	// type) pool can hold before it answers InsufficientInstanceCapacity.
	DefaultCapacity int `json:"defaultCapacity,omitempty"`
	// Pools override capacity or price of the pools they match.
	Pools []PoolOverride `json:"pools,omitempty"`
	// BootDelay is from launch until the node is Ready (default 40s).
	BootDelay metav1.Duration `json:"bootDelay,omitempty"`
	// BootJitter spreads boots: each instance takes BootDelay plus a
	// seeded draw from [0, bootJitter) (default 0: all take BootDelay).
	BootJitter metav1.Duration `json:"bootJitter,omitempty"`
	// ShutdownDelay is how long a terminated instance stays shutting-down
	// before it is gone (default 30s). Billing stops when it starts.
	ShutdownDelay metav1.Duration `json:"shutdownDelay,omitempty"`
	// PodStartDelay is from binding until the pod is Running (default 2s).
	PodStartDelay metav1.Duration `json:"podStartDelay,omitempty"`
	// CapacityReservations exist in the account from the start (ODCRs and
	// Capacity Blocks); node classes select them with
	// capacityReservationSelectorTerms. The report counts what they cost
	// over the run (paid whether used or not) apart from the launches.
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
}

// CapacityReservation is a capacity reservation of the simulated account.
type CapacityReservation struct {
	// ID, e.g. cr-0123456789abcdef0; generated when empty.
	ID           string `json:"id,omitempty"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	Count        int    `json:"count"`
	// Type is default (an ODCR, the default) or capacity-block.
	Type string `json:"type,omitempty"`
	// MatchCriteria is open (the default) or targeted; a Capacity Block is targeted.
	MatchCriteria string `json:"matchCriteria,omitempty"`
	// Ends is when the reservation ends, from the start of the run; none
	// when unset (a Capacity Block needs one).
	Ends metav1.Duration   `json:"ends,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
}

// Controller holds the controller's settings a scenario may change; the
// rest are cmd/controller's defaults.
type Controller struct {
	// InterruptionHandling runs the interruption handler on the simulated
	// AWS's EventBridge queue (the chart's interruptionQueue); default true.
	InterruptionHandling *bool `json:"interruptionHandling,omitempty"`
	// RebalanceMode is off, prespin (default) or drain.
	RebalanceMode string `json:"rebalanceMode,omitempty"`
	// FeatureGates override the defaults (Disruption on,
	// SpotToSpotConsolidation off).
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// Interruptions reports whether the interruption handler runs.
func (c Controller) Interruptions() bool {
	return c.InterruptionHandling == nil || *c.InterruptionHandling
}

// PoolOverride changes the capacity pools it matches. Empty match fields
// match every value; InstanceType accepts a trailing "*" ("c6g.*").
type PoolOverride struct {
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	// Capacity replaces DefaultCapacity for matching pools.
	Capacity *int `json:"capacity,omitempty"`
	// Price replaces the catalog price (USD per hour) of matching pools.
	Price *float64 `json:"price,omitempty"`
}

// SystemNode is a node present from the start, outside any NodePool.
type SystemNode struct {
	Name         string            `json:"name"`
	InstanceType string            `json:"instanceType"`
	Zone         string            `json:"zone"`
	CapacityType string            `json:"capacityType,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Taints       []corev1.Taint    `json:"taints,omitempty"`
}

// Queue is an SQS queue in the simulated account.
type Queue struct {
	Name string `json:"name"`
	// VisibilityTimeout is how long a received message stays hidden (default 30s).
	VisibilityTimeout metav1.Duration `json:"visibilityTimeout,omitempty"`
}

// Deployment is a workload whose replica count follows a schedule.
type Deployment struct {
	Name     string                 `json:"name"`
	Template corev1.PodTemplateSpec `json:"template"`
	// Replicas is a step function: each entry holds from At until the next.
	Replicas []ReplicasAt `json:"replicas"`
	// ShutdownTime is how long a pod takes to exit after SIGTERM (default
	// 0: at once). The kubelet kills it when the pod's
	// terminationGracePeriodSeconds run out first.
	ShutdownTime metav1.Duration `json:"shutdownTime,omitempty"`
}

// ReplicasAt sets a replica count at a time.
type ReplicasAt struct {
	At       metav1.Duration `json:"at"`
	Replicas int32           `json:"replicas"`
}

// QueueWorker is a Deployment scaled by KEDA's aws-sqs-queue scaler whose
// pods consume the queue.
type QueueWorker struct {
	Name     string                 `json:"name"`
	Template corev1.PodTemplateSpec `json:"template"`
	Queue    string                 `json:"queue"`
	// ProcessingTime is how long one message takes.
	ProcessingTime metav1.Duration `json:"processingTime"`
	// Concurrency is how many messages a pod works on at once (default 1).
	Concurrency int `json:"concurrency,omitempty"`
	// WaitTime is the ReceiveMessage long-poll wait (default 20s).
	WaitTime metav1.Duration `json:"waitTime,omitempty"`
	Scaler   Scaler          `json:"scaler"`
}

// Scaler is the part of a KEDA ScaledObject with an aws-sqs-queue trigger
// that decides replicas. Field names follow KEDA's.
type Scaler struct {
	QueueLength           int64           `json:"queueLength,omitempty"`
	ActivationQueueLength int64           `json:"activationQueueLength,omitempty"`
	MinReplicaCount       int32           `json:"minReplicaCount,omitempty"`
	MaxReplicaCount       int32           `json:"maxReplicaCount,omitempty"`
	PollingInterval       metav1.Duration `json:"pollingInterval,omitempty"`
	CooldownPeriod        metav1.Duration `json:"cooldownPeriod,omitempty"`
	ScaleOnInFlight       *bool           `json:"scaleOnInFlight,omitempty"`
	ScaleOnDelayed        bool            `json:"scaleOnDelayed,omitempty"`
}

// Job runs Completions pods, at most Parallelism at once, each for Duration once Running.
type Job struct {
	Name        string                 `json:"name"`
	At          metav1.Duration        `json:"at"`
	Template    corev1.PodTemplateSpec `json:"template"`
	Parallelism int32                  `json:"parallelism,omitempty"`
	Completions int32                  `json:"completions,omitempty"`
	Duration    metav1.Duration        `json:"duration"`
	// ProvisioningClassName, when set, makes the job a gang as Kueue
	// admits one: at At a PodTemplate and a ProvisioningRequest
	// (autoscaling.x-k8s.io/v1) of this class for Parallelism pods are
	// created, and the job's pods (annotated to consume the request) only
	// once the request is Provisioned; never when it Failed.
	ProvisioningClassName string `json:"provisioningClassName,omitempty"`
}

// Event is something that happens at a time. Exactly one action is set.
type Event struct {
	At               metav1.Duration   `json:"at"`
	SendMessages     *SendMessages     `json:"sendMessages,omitempty"`
	SpotInterruption *SpotInterruption `json:"spotInterruption,omitempty"`
	ICE              *ICE              `json:"ice,omitempty"`
	PriceChange      *PriceChange      `json:"priceChange,omitempty"`
	DeleteNodes      *DeleteNodes      `json:"deleteNodes,omitempty"`
	// RebalanceRecommendation sends EC2's rebalance recommendation to
	// running spot instances, chosen as SpotInterruption chooses them.
	RebalanceRecommendation *SpotInterruption `json:"rebalanceRecommendation,omitempty"`
	// AMIRelease publishes new Amazon AMIs behind the public SSM
	// parameters the aliases (al2023@latest, bottlerocket@latest) read:
	// EC2NodeClass status resolves the new images at its next refresh and
	// the nodes launched from the old ones drift.
	AMIRelease *AMIRelease `json:"amiRelease,omitempty"`
	// NodeCondition makes nodes unhealthy: the kubelet goes NotReady, or
	// a node monitoring agent reports a failing condition.
	NodeCondition *NodeCondition `json:"nodeCondition,omitempty"`
	// ScaleNodePool sets a static NodePool's spec.replicas, as
	// kubectl scale nodepool would.
	ScaleNodePool *ScaleNodePool `json:"scaleNodePool,omitempty"`
}

// NodeCondition sets a condition on Count (default 1) of a pool's running
// nodes, the oldest first (nodes already reporting it are passed over).
//
// Type Ready (the default) plays the kubelet stopping: the node stops
// running its pods (they stay bound, not Running) and confirms no
// deletion; the node lifecycle controller sets Ready to Status (Unknown,
// the default: the kubelet stopped reporting; or False), taints the node
// node.kubernetes.io/unreachable (Unknown) or not-ready (False) NoSchedule
// and NoExecute, and evicts each pod once its toleration of the NoExecute
// taint runs out (300 s when the pod names none, as the
// DefaultTolerationSeconds admission plugin sets; never for a pod that
// tolerates it without tolerationSeconds, as DaemonSet pods do).
//
// Any other Type (AcceleratedHardwareReady, StorageReady, NetworkingReady,
// KernelReady, ContainerRuntimeReady…) plays the EKS node monitoring
// agent: the condition is set to Status (default False) and nothing else
// changes.
type NodeCondition struct {
	Pool   string `json:"pool"`
	Count  int    `json:"count,omitempty"`
	Type   string `json:"type,omitempty"`
	Status string `json:"status,omitempty"`
}

// ScaleNodePool names a static pool (one with spec.replicas) and its new
// replica count.
type ScaleNodePool struct {
	Pool     string `json:"pool"`
	Replicas int64  `json:"replicas"`
}

// AMIRelease names the new release; the images' names end in it.
type AMIRelease struct {
	// Release is the version suffix of the new images' names, as EKS
	// names its releases ("v20260105"); required.
	Release string `json:"release"`
}

// DeleteNodes deletes Count (default 1) of a pool's nodes, the oldest
// first, as `kubectl delete node` does: Nodesmith's finalizer turns the
// deletion into a drain through the Eviction API (PDBs, grace periods)
// before the instance is terminated.
type DeleteNodes struct {
	Pool  string `json:"pool"`
	Count int    `json:"count,omitempty"`
}

// SendMessages puts Count messages on a queue.
type SendMessages struct {
	Queue string `json:"queue"`
	Count int    `json:"count"`
}

// SpotInterruption sends the two-minute notice to running spot instances:
// Count of them (default 1), the oldest first, optionally only of one
// instance type or zone.
type SpotInterruption struct {
	Count        int    `json:"count,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
}

// ICE makes matching pools answer InsufficientInstanceCapacity for Duration
// (zero: until the end of the run). Match fields as in PoolOverride.
type ICE struct {
	InstanceType string          `json:"instanceType,omitempty"`
	Zone         string          `json:"zone,omitempty"`
	CapacityType string          `json:"capacityType,omitempty"`
	Duration     metav1.Duration `json:"duration,omitempty"`
}

// PriceChange sets the price of matching pools (USD per hour).
type PriceChange struct {
	InstanceType string  `json:"instanceType,omitempty"`
	Zone         string  `json:"zone,omitempty"`
	CapacityType string  `json:"capacityType,omitempty"`
	Price        float64 `json:"price"`
}
