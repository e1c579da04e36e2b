package catalog

import (
	corev1 "k8s.io/api/core/v1"
)

// InstanceType is one machine shape a cloud can launch, with the offerings
// (zone × capacity type) it can be bought in. It is cloud-agnostic: the
// embedded snapshot fills it for AWS, the AWS provider fills it from live
// DescribeInstanceTypes data, and tests build it by hand.
type InstanceType struct {
	Name string
	// Labels are the well-known labels every node of this type carries
	// (arch, os, instance-type and aws.nodesmith.sh/instance-*), without the
	// per-offering zone and capacity-type labels.
	Labels map[string]string

	Arch       string // amd64 | arm64 (Kubernetes spelling)
	Family     string // c6g
	Category   string // c
	Generation int    // 6
	Size       string // xlarge

	VCPU                 int
	MemoryMiB            int64
	GPUCount             int
	GPUName              string
	GPUManufacturer      string
	GPUMemoryMiB         int64
	AcceleratorCount     int
	AcceleratorName      string // inferentia2, trainium …
	Hypervisor           string
	LocalNVMeGB          int64
	NetworkBandwidthMbps int64
	MaxENIs              int
	IPv4PerENI           int
	BareMetal            bool
	// SpotInterruptionBucket is the Spot Instance Advisor range ("<5%" … ">20%"); empty when unknown.
	SpotInterruptionBucket string
	// OnDemandPrice is the on-demand Linux price in USD per hour.
	OnDemandPrice float64

	// Capacity is what the machine has (cpu, memory after VM overhead, pods,
	// ephemeral-storage, extended resources such as nvidia.com/gpu).
	Capacity corev1.ResourceList
	// Overhead is what the kubelet keeps back: kube-reserved, system-reserved
	// and the eviction threshold. Allocatable = Capacity − Overhead.
	Overhead Overhead

	// Offerings are where and how the type can be bought.
	Offerings Offerings

	// allocatable caches Capacity − Overhead for types built by NewInstanceType.
	allocatable corev1.ResourceList
}

// Overhead is the capacity a node keeps back from pods.
type Overhead struct {
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Offering is one way to buy an instance type: a zone and a capacity type, at a price.
type Offering struct {
	Zone         string
	CapacityType string // spot | on-demand | reserved (nodesmith.sh/capacity-type values)
	// Price in USD per hour.
	Price float64
	// Available is false while the offering is known to be out of capacity
	// (ICE), or above its pool's spot interruption risk ceiling.
	Available bool
	// InterruptionRisk is a spot offering's rated risk in percent of
	// instances interrupted per month (SpotRisk), filled by WithSpotRisk;
	// zero when not rated and for on-demand.
	InterruptionRisk float64

	// Reservation is set on a reserved offering: the capacity reservation
	// it launches into and how many instances it still has free.
	Reservation *ReservationRef

	// PricedBy names the NodeOverlay that set Price (ApplyOverlays); empty
	// when Price is the cloud's.
	PricedBy string
}

// Offerings is the list of an instance type's offerings.
type Offerings []Offering
