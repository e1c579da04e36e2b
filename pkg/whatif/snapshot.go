package whatif

import (
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// The snapshot file's apiVersion and kind. It is a file format of the CLI,
// not an API the cluster serves.
const (
	SnapshotAPIVersion = "cli.nodesmith.sh/v1alpha1"
	SnapshotKind       = "ClusterSnapshot"
)

// Snapshot is everything the CLI's answers read about a cluster.
type Snapshot struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// TakenAt is "now" for every answer about the snapshot.
	TakenAt metav1.Time `json:"takenAt"`
	// Source names where it was taken (the kubeconfig context).
	Source string `json:"source,omitempty"`

	Pods                 []corev1.Pod                   `json:"pods,omitempty"`
	Nodes                []corev1.Node                  `json:"nodes,omitempty"`
	NodeClaims           []nsv1.NodeClaim               `json:"nodeClaims,omitempty"`
	NodePools            []nsv1.NodePool                `json:"nodePools,omitempty"`
	EC2NodeClasses       []awsv1.EC2NodeClass           `json:"ec2NodeClasses,omitempty"`
	DaemonSets           []appsv1.DaemonSet             `json:"daemonSets,omitempty"`
	PodDisruptionBudgets []policyv1.PodDisruptionBudget `json:"podDisruptionBudgets,omitempty"`
	// The storage volume topology reads (provisioning.VolumeRequirements):
	// a pending pod's claims pin where it may run, or hold it back.
	PersistentVolumeClaims []corev1.PersistentVolumeClaim `json:"persistentVolumeClaims,omitempty"`
	PersistentVolumes      []corev1.PersistentVolume      `json:"persistentVolumes,omitempty"`
	StorageClasses         []storagev1.StorageClass       `json:"storageClasses,omitempty"`
	// CapacityBuffers and the PodTemplates they name: the room plan keeps
	// and explain node counts as used (provisioning.ResolveBuffer).
	PodTemplates    []corev1.PodTemplate  `json:"podTemplates,omitempty"`
	CapacityBuffers []cbv1.CapacityBuffer `json:"capacityBuffers,omitempty"`
	// NodeOverlays reprice and add capacity to instance types, as the
	// controller applies them (catalog.ApplyOverlays).
	NodeOverlays []nsv1alpha1.NodeOverlay `json:"nodeOverlays,omitempty"`
	// Commitments (Savings Plans, RIs) the solver charges on-demand to,
	// as the controller does.
	Commitments []nsv1alpha1.Commitment `json:"commitments,omitempty"`

	// UnavailableOfferings are offerings to treat as out of capacity, as
	// the controller's insufficient-capacity cache would. That cache lives
	// in the controller's memory, so a snapshot taken from a cluster has
	// none: add entries to ask "what if these pools ran dry".
	UnavailableOfferings []Offering `json:"unavailableOfferings,omitempty"`
}

// Offering names one (instance type, zone, capacity type); an empty field
// matches every value.
type Offering struct {
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
}

func (o Offering) matches(it, zone, ct string) bool {
	return (o.InstanceType == "" || o.InstanceType == it) && (o.Zone == "" || o.Zone == zone) &&
		(o.CapacityType == "" || o.CapacityType == ct)
}

// ReadSnapshot reads a snapshot file (YAML or JSON).
func ReadSnapshot(r io.Reader) (*Snapshot, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading the snapshot: %w", err)
	}
	s := &Snapshot{}
	if err := yaml.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("parsing the snapshot: %w", err)
	}
	if s.APIVersion != SnapshotAPIVersion || s.Kind != SnapshotKind {
		return nil, fmt.Errorf("not a snapshot: apiVersion %q kind %q, want %s %s (written by nodesmith snapshot)",
			s.APIVersion, s.Kind, SnapshotAPIVersion, SnapshotKind)
	}
	return s, nil
}

// Index is the snapshot as the controller's decisions read it.
func (s *Snapshot) Index() *provisioning.Snapshot {
	idx := provisioning.NewSnapshot(ptrs(s.Pods), ptrs(s.Nodes), ptrs(s.NodeClaims), ptrs(s.NodePools),
		ptrs(s.DaemonSets), ptrs(s.PodDisruptionBudgets))
	idx.Storage = provisioning.NewStorage(ptrs(s.PersistentVolumeClaims), ptrs(s.PersistentVolumes), ptrs(s.StorageClasses))
	idx.Commitments, _ = catalog.CommitmentsFrom(s.Commitments)
	return idx
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
