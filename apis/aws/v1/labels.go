package v1

// Well-known labels of instance types launched on AWS; every node carries
// them so pods and NodePools can select on them.
const (
	Group = "aws.nodesmith.sh"

	LabelInstanceCategory        = Group + "/instance-category"
	LabelInstanceFamily          = Group + "/instance-family"
	LabelInstanceGeneration      = Group + "/instance-generation"
	LabelInstanceSize            = Group + "/instance-size"
	LabelInstanceCPU             = Group + "/instance-cpu"
	LabelInstanceMemory          = Group + "/instance-memory"
	LabelInstanceGPUCount        = Group + "/instance-gpu-count"
	LabelInstanceGPUName         = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer = Group + "/instance-gpu-manufacturer"
	// The accelerator labels name non-GPU accelerators (Inferentia,
	// Trainium, …); like the GPU labels they are absent on types without one.
	LabelInstanceAcceleratorCount        = Group + "/instance-accelerator-count"
	LabelInstanceAcceleratorName         = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer = Group + "/instance-accelerator-manufacturer"
	LabelInstanceHypervisor              = Group + "/instance-hypervisor"
	LabelInstanceLocalNVMe               = Group + "/instance-local-nvme"
	LabelInstanceNetworkBandwidth        = Group + "/instance-network-bandwidth"
	LabelSpotInterruptionBucket          = Group + "/spot-interruption-bucket"
	LabelEC2NodeClass                    = Group + "/ec2nodeclass"
	// LabelCapacityReservationID names the capacity reservation a reserved
	// node launched into; LabelCapacityReservationType is its type,
	// "default" (an ODCR) or "capacity-block". Both exist only on nodes
	// whose capacity type is reserved.
	LabelCapacityReservationID   = Group + "/capacity-reservation-id"
	LabelCapacityReservationType = Group + "/capacity-reservation-type"
	// LabelCapacityReservationInterruptible is "true" on a node in an
	// interruptible reservation, "false" in any other (reserved nodes only).
	LabelCapacityReservationInterruptible = Group + "/capacity-reservation-interruptible"

	// TagDiscovery is the conventional tag that marks subnets and security groups for a cluster.
	TagDiscovery = "nodesmith.sh/discovery"
	// TagCluster, TagNodePool, TagNodeClaim are put on every instance Nodesmith launches.
	TagCluster   = "nodesmith.sh/cluster"
	TagNodePool  = "nodesmith.sh/nodepool"
	TagNodeClaim = "nodesmith.sh/nodeclaim"
	// TagLaunchBatch is put at launch on the instances of a CreateFleet call
	// made for several claims: their launch keys (cloudprovider.LaunchKey),
	// space-separated, so a claim can find and take its instance when the
	// call's answer, or the tagging after it, was lost.
	TagLaunchBatch = "nodesmith.sh/launch-batch"
)

// Capacity reservation types (EC2's reservationType) and instance match
// criteria, as DescribeCapacityReservations spells them.
const (
	CapacityReservationTypeDefault       = "default"
	CapacityReservationTypeCapacityBlock = "capacity-block"

	InstanceMatchCriteriaOpen     = "open"
	InstanceMatchCriteriaTargeted = "targeted"
)
