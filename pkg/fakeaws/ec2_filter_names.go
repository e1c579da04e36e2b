package fakeaws

// The filter names EC2 documents for DescribeInstances and
// DescribeInstanceTypes (the Filters member of each request in the EC2 API
// reference, as botocore 1.43's service model carries it), besides tag:<key>.
// A name on these lists that the fake does not simulate is refused with a
// message saying so, not taken for a typo and not silently matched against
// nothing.
var (
	documentedInstanceFilters = setOf(
		"affinity", "architecture", "availability-zone", "availability-zone-id",
		"block-device-mapping.attach-time", "block-device-mapping.delete-on-termination",
		"block-device-mapping.device-name", "block-device-mapping.status",
		"block-device-mapping.volume-id", "boot-mode", "capacity-reservation-id",
		"capacity-reservation-specification.capacity-reservation-preference",
		"capacity-reservation-specification.capacity-reservation-target.capacity-reservation-id",
		"capacity-reservation-specification.capacity-reservation-target.capacity-reservation-resource-group-arn",
		"client-token", "current-instance-boot-mode", "dns-name", "ebs-optimized", "ena-support",
		"enclave-options.enabled", "hibernation-options.configured", "host-id", "hypervisor",
		"iam-instance-profile.arn", "iam-instance-profile.id", "image-id", "instance-id",
		"instance-lifecycle", "instance-state-code", "instance-state-name", "instance-type",
		"instance.group-id", "instance.group-name", "ip-address", "ipv6-address", "kernel-id", "key-name",
		"launch-index", "launch-time", "maintenance-options.auto-recovery",
		"metadata-options.http-endpoint", "metadata-options.http-protocol-ipv4",
		"metadata-options.http-protocol-ipv6", "metadata-options.http-put-response-hop-limit",
		"metadata-options.http-tokens", "metadata-options.instance-metadata-tags",
		"metadata-options.state", "monitoring-state",
		"network-interface.addresses.association.allocation-id",
		"network-interface.addresses.association.association-id",
		"network-interface.addresses.association.carrier-ip",
		"network-interface.addresses.association.customer-owned-ip",
		"network-interface.addresses.association.ip-owner-id",
		"network-interface.addresses.association.public-dns-name",
		"network-interface.addresses.association.public-ip", "network-interface.addresses.primary",
		"network-interface.addresses.private-dns-name", "network-interface.addresses.private-ip-address",
		"network-interface.association.allocation-id", "network-interface.association.association-id",
		"network-interface.association.carrier-ip", "network-interface.association.customer-owned-ip",
		"network-interface.association.ip-owner-id", "network-interface.association.public-dns-name",
		"network-interface.association.public-ip", "network-interface.attachment.attach-time",
		"network-interface.attachment.attachment-id",
		"network-interface.attachment.delete-on-termination", "network-interface.attachment.device-index",
		"network-interface.attachment.instance-id", "network-interface.attachment.instance-owner-id",
		"network-interface.attachment.network-card-index", "network-interface.attachment.status",
		"network-interface.availability-zone", "network-interface.deny-all-igw-traffic",
		"network-interface.description", "network-interface.group-id", "network-interface.group-name",
		"network-interface.ipv4-prefixes.ipv4-prefix", "network-interface.ipv6-address",
		"network-interface.ipv6-addresses.ipv6-address",
		"network-interface.ipv6-addresses.is-primary-ipv6", "network-interface.ipv6-native",
		"network-interface.ipv6-prefixes.ipv6-prefix", "network-interface.mac-address",
		"network-interface.network-interface-id", "network-interface.operator.managed",
		"network-interface.operator.principal", "network-interface.outpost-arn",
		"network-interface.owner-id", "network-interface.private-dns-name",
		"network-interface.private-ip-address", "network-interface.public-dns-name",
		"network-interface.requester-id", "network-interface.requester-managed",
		"network-interface.status", "network-interface.source-dest-check", "network-interface.subnet-id",
		"network-interface.tag-key", "network-interface.tag-value", "network-interface.vpc-id",
		"network-performance-options.bandwidth-weighting", "operator.managed", "operator.principal",
		"outpost-arn", "owner-id", "placement-group-name", "placement-partition-number", "platform",
		"platform-details", "private-dns-name",
		"private-dns-name-options.enable-resource-name-dns-a-record",
		"private-dns-name-options.enable-resource-name-dns-aaaa-record",
		"private-dns-name-options.hostname-type", "private-ip-address", "product-code",
		"product-code.type", "ramdisk-id", "reason", "requester-id", "reservation-id", "root-device-name",
		"root-device-type", "source-dest-check", "spot-instance-request-id", "state-reason-code",
		"state-reason-message", "subnet-id", "tag-key", "tenancy", "tpm-support", "usage-operation",
		"usage-operation-update-time", "virtualization-type", "vpc-id",
	)
	documentedInstanceTypeFilters = setOf(
		"auto-recovery-supported", "bare-metal", "burstable-performance-supported", "current-generation",
		"dedicated-hosts-supported", "ebs-info.attachment-limit-type", "ebs-info.maximum-ebs-attachments",
		"ebs-info.ebs-optimized-info.baseline-bandwidth-in-mbps",
		"ebs-info.ebs-optimized-info.baseline-iops",
		"ebs-info.ebs-optimized-info.baseline-throughput-in-mbps",
		"ebs-info.ebs-optimized-info.maximum-bandwidth-in-mbps",
		"ebs-info.ebs-optimized-info.maximum-iops",
		"ebs-info.ebs-optimized-info.maximum-throughput-in-mbps", "ebs-info.ebs-optimized-support",
		"ebs-info.encryption-support", "ebs-info.nvme-support", "free-tier-eligible",
		"hibernation-supported", "hypervisor", "instance-storage-info.disk.count",
		"instance-storage-info.disk.size-in-gb", "instance-storage-info.disk.type",
		"instance-storage-info.encryption-support", "instance-storage-info.nvme-support",
		"instance-storage-info.total-size-in-gb", "instance-storage-supported", "instance-type",
		"memory-info.size-in-mib", "network-info.bandwidth-weightings",
		"network-info.efa-info.maximum-efa-interfaces", "network-info.efa-supported",
		"network-info.ena-support", "network-info.flexible-ena-queues-support",
		"network-info.encryption-in-transit-supported", "network-info.ipv4-addresses-per-interface",
		"network-info.ipv6-addresses-per-interface", "network-info.ipv6-supported",
		"network-info.maximum-network-cards", "network-info.maximum-network-interfaces",
		"network-info.network-performance", "nitro-enclaves-support", "nitro-tpm-support",
		"nitro-tpm-info.supported-versions", "processor-info.supported-architecture",
		"processor-info.sustained-clock-speed-in-ghz", "processor-info.supported-features",
		"reboot-migration-support", "supported-boot-mode", "supported-root-device-type",
		"supported-usage-class", "supported-virtualization-type", "vcpu-info.default-cores",
		"vcpu-info.default-threads-per-core", "vcpu-info.default-vcpus", "vcpu-info.valid-cores",
		"vcpu-info.valid-threads-per-core",
	)
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
