package catalog

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// DefaultRegion is the region of the embedded snapshot.
const DefaultRegion = "us-east-1"

// DefaultZones are the six us-east-1 zones the snapshot's types are spread over.
var DefaultZones = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}

// Options shape a catalog. The zero value is the EKS AL2023 default in us-east-1.
type Options struct {
	// Region for the topology.kubernetes.io/region label; default us-east-1.
	Region string
	// Zones offerings are spread over; default us-east-1a…f.
	Zones []string
	// VMMemoryOverheadPercent of memory the VM keeps; 0 means the default
	// 0.075, a negative value means none.
	VMMemoryOverheadPercent float64
	// EphemeralStorage is the root volume size; zero means 20Gi.
	EphemeralStorage resource.Quantity
	// ReservedENIs are kept from pod networking (e.g. for a custom ENI); default 0.
	ReservedENIs int
	// MaxPodsCap caps the ENI-limited pod count (e.g. 110); 0 means no cap,
	// as on EKS AL2023 nodes. Kubelet.MaxPods still wins.
	MaxPodsCap int
	// Kubelet settings from the node class.
	Kubelet KubeletSettings
	// IncludePreviousGeneration keeps types AWS calls previous generation
	// (a1, m4, c4, t2, …). Off by default: they cost more per vCPU than
	// their successors, so a solver never wants them unless asked.
	IncludePreviousGeneration bool
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if len(o.Zones) == 0 {
		o.Zones = DefaultZones
	}
	o.Zones = append([]string(nil), o.Zones...)
	switch {
	case o.VMMemoryOverheadPercent == 0:
		o.VMMemoryOverheadPercent = DefaultVMMemoryOverheadPercent
	case o.VMMemoryOverheadPercent < 0:
		o.VMMemoryOverheadPercent = 0
	}
	if o.EphemeralStorage.IsZero() {
		o.EphemeralStorage = quantityDefaultEphemeral.DeepCopy()
	}
	return o
}

// NewInstanceType turns a spec and its offerings into an instance type with
// capacity, overhead and labels. The offerings are taken as given (the
// snapshot's come from OfferingsFor; the AWS provider passes live ones).
func NewInstanceType(spec Spec, offerings Offerings, opts Options) *InstanceType {
	opts = opts.withDefaults()
	pods := maxPods(&spec, &opts)
	capa := capacity(&spec, &opts, pods)
	over := overhead(&spec, &opts, capa, pods)
	it := &InstanceType{
		Name:                 spec.Name,
		Arch:                 KubeArch(spec.Architecture),
		Family:               spec.Family,
		Category:             spec.Category,
		Generation:           spec.Generation,
		Size:                 spec.Size,
		VCPU:                 spec.VCPUs,
		MemoryMiB:            spec.MemoryMiB,
		GPUCount:             spec.GPUCount,
		GPUName:              spec.GPUName,
		GPUManufacturer:      spec.GPUManufacturer,
		GPUMemoryMiB:         spec.GPUMemoryMiB,
		AcceleratorCount:     spec.AcceleratorCount,
		AcceleratorName:      spec.AcceleratorName,
		Hypervisor:           spec.Hypervisor,
		LocalNVMeGB:          spec.InstanceStorageGB,
		NetworkBandwidthMbps: spec.NetworkBandwidthMbps,
		MaxENIs:              spec.MaxENIs,
		IPv4PerENI:           spec.IPv4PerENI,
		BareMetal:            spec.BareMetal,
		OnDemandPrice:        spec.OnDemandPrice,
		Capacity:             capa,
		Overhead:             over,
		Offerings:            append(Offerings(nil), offerings...),
	}
	if spec.SpotInterruption != nil {
		it.SpotInterruptionBucket = spec.SpotInterruption.Label
	}
	it.Labels = labels(&spec, opts.Region)
	it.allocatable = subtractFloor(capa, over.Total())
	return it
}

// KubeArch maps AWS architecture names to Kubernetes ones (x86_64 → amd64).
func KubeArch(awsArch string) string {
	switch awsArch {
	case ArchX86_64, "x86_64_mac":
		return "amd64"
	case ArchARM64, "arm64_mac":
		return "arm64"
	}
	return awsArch
}

// spotBucketValues are label-safe spellings of the advisor's ranges ("<5%"
// is not a valid label value), indexed by SpotInterruption.Index.
var spotBucketValues = []string{"0-5", "5-10", "10-15", "15-20", "20-100"}

// SpotInterruptionBucketValue is the aws.nodesmith.sh/spot-interruption-bucket
// value for an advisor range index: "0-5", "5-10", "10-15", "15-20" or
// "20-100" (percent of instances interrupted per month); "" if out of range.
func SpotInterruptionBucketValue(index int) string {
	if index < 0 || index >= len(spotBucketValues) {
		return ""
	}
	return spotBucketValues[index]
}

// labels are the per-type labels; empty facts are left out so a pod's
// DoesNotExist selects types lacking them. Numbers are decimal integers.
func labels(spec *Spec, region string) map[string]string {
	l := map[string]string{
		corev1.LabelArchStable:         KubeArch(spec.Architecture),
		corev1.LabelOSStable:           string(corev1.Linux),
		corev1.LabelInstanceTypeStable: spec.Name,
		corev1.LabelTopologyRegion:     region,
		awsv1.LabelInstanceCategory:    spec.Category,
		awsv1.LabelInstanceFamily:      spec.Family,
		awsv1.LabelInstanceSize:        spec.Size,
		awsv1.LabelInstanceGPUName:     spec.GPUName,
		awsv1.LabelInstanceHypervisor:  spec.Hypervisor,
		awsv1.LabelInstanceCPU:         strconv.Itoa(spec.VCPUs),
		awsv1.LabelInstanceMemory:      strconv.FormatInt(spec.MemoryMiB, 10),
		awsv1.LabelInstanceLocalNVMe:   strconv.FormatInt(spec.InstanceStorageGB, 10),
	}
	// GPU and accelerator labels exist only on types that have one, so an
	// image's requirement "gpu-count Exists" / "DoesNotExist" (status.amis)
	// tells GPU types from the rest, as Karpenter's labels do.
	if spec.GPUCount > 0 {
		l[awsv1.LabelInstanceGPUCount] = strconv.Itoa(spec.GPUCount)
		l[awsv1.LabelInstanceGPUManufacturer] = spec.GPUManufacturer
	}
	if spec.AcceleratorCount > 0 {
		l[awsv1.LabelInstanceAcceleratorCount] = strconv.Itoa(spec.AcceleratorCount)
		l[awsv1.LabelInstanceAcceleratorName] = spec.AcceleratorName
		l[awsv1.LabelInstanceAcceleratorManufacturer] = spec.AcceleratorManufacturer
	}
	if spec.Generation > 0 {
		l[awsv1.LabelInstanceGeneration] = strconv.Itoa(spec.Generation)
	}
	if spec.NetworkBandwidthMbps > 0 {
		l[awsv1.LabelInstanceNetworkBandwidth] = strconv.FormatInt(spec.NetworkBandwidthMbps, 10)
	}
	if spec.SpotInterruption != nil {
		l[awsv1.LabelSpotInterruptionBucket] = SpotInterruptionBucketValue(spec.SpotInterruption.Index)
	}
	for k, v := range l {
		if v == "" {
			delete(l, k)
		}
	}
	return l
}

// LabelsFor is the full label set of a node bought through offering o:
// the type's labels plus zone and capacity type. The map is the caller's.
func (it *InstanceType) LabelsFor(o Offering) map[string]string {
	out := make(map[string]string, len(it.Labels)+2)
	for k, v := range it.Labels {
		out[k] = v
	}
	if o.Zone != "" {
		out[corev1.LabelTopologyZone] = o.Zone
	}
	if o.CapacityType != "" {
		out[nsv1.LabelCapacityType] = o.CapacityType
	}
	return out
}

// Allocatable is what pods may request on a node of this type: Capacity −
// Overhead, never negative. Computed once by NewInstanceType; for a type
// built by hand it is computed on each call. Read-only: do not modify.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	if it.allocatable != nil {
		return it.allocatable
	}
	return subtractFloor(it.Capacity, it.Overhead.Total())
}

// WithOfferings returns a copy of the type with the given offerings (the
// slice is copied); labels, capacity and overhead stay shared, read-only.
// This is how callers change prices or availability without touching a
// catalog's shared types.
func (it *InstanceType) WithOfferings(offerings Offerings) *InstanceType {
	return it.withOfferings(append(Offerings(nil), offerings...))
}

// withOfferings is WithOfferings taking ownership of offerings.
func (it *InstanceType) withOfferings(offerings Offerings) *InstanceType {
	cp := *it
	cp.Offerings = offerings
	return &cp
}

// Exotic reports whether the type carries GPUs or accelerators or is bare
// metal: dear or special capacity, launched only when nothing else holds a
// claim's pods (the solver does not count it toward a claim's options and
// the provider drops it from a launch that has others).
func (it *InstanceType) Exotic() bool {
	return it.GPUCount > 0 || it.AcceleratorCount > 0 || it.BareMetal
}
