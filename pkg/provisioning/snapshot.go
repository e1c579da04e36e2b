package provisioning

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// Snapshot is everything a provisioning or disruption decision reads, as
// plain values: the controller lists it from its cache
// (pkg/controllers/state), the simulator builds it from its model.
// Decisions must not mutate the objects (the controller's are the cache's).
type Snapshot struct {
	Pods        []*corev1.Pod
	Nodes       []*corev1.Node
	NodeClaims  []*nsv1.NodeClaim
	NodePools   []*nsv1.NodePool
	DaemonSets  []*appsv1.DaemonSet
	PDBs        []*policyv1.PodDisruptionBudget
	PodsByNode  map[string][]*corev1.Pod
	NodeByID    map[string]*corev1.Node // by providerID
	ClaimByNode map[string]*nsv1.NodeClaim
	// Storage is the PVCs, PVs and StorageClasses volume topology reads
	// (VolumeRequirements); nil holds none, so a pod with a claim waits.
	Storage *Storage
	// Commitments are the Savings Plans and RIs on-demand usage is charged
	// to (scheduling.Input.Commitments).
	Commitments []catalog.Commitment
}
