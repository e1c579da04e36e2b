package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass holds the AWS settings a NodePool's instances launch with.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ec2nc,categories=nodesmith
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=".spec.role",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EC2NodeClassSpec `json:"spec"`
	// +optional
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassSpec is the launch configuration.
//
// +kubebuilder:validation:XValidation:message="set exactly one of role or instanceProfile",rule="has(self.role) != has(self.instanceProfile)"
// +kubebuilder:validation:XValidation:message="amiFamily must match the alias family (e.g. al2023@latest needs amiFamily AL2023 or no amiFamily)",rule="!has(self.amiFamily) || !self.amiSelectorTerms.exists(t, has(t.alias)) || self.amiSelectorTerms.exists(t, has(t.alias) && t.alias.split('@')[0].lowerAscii() == self.amiFamily.lowerAscii())"
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms select the subnets instances launch in; terms are ORed.
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms needs at least one term (e.g. tags: {nodesmith.sh/discovery: my-cluster})",rule="size(self) > 0"
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// SecurityGroupSelectorTerms select the instances' security groups; terms are ORed.
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms needs at least one term (e.g. tags: {nodesmith.sh/discovery: my-cluster})",rule="size(self) > 0"
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	// AMISelectorTerms select the machine image; an alias (al2023@latest) picks the EKS-optimized image.
	// +kubebuilder:validation:XValidation:message="amiSelectorTerms needs at least one term (e.g. alias: al2023@latest)",rule="size(self) > 0"
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:message="an alias term must be the only AMI selector term",rule="!self.exists(t, has(t.alias)) || size(self) == 1"
	// +listType=atomic
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`
	// AMIFamily decides the user-data format: AL2023, Bottlerocket or Custom. Derived from the alias when unset.
	// +kubebuilder:validation:Enum=AL2023;Bottlerocket;Custom
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`
	// Role is the IAM role whose instance profile Nodesmith manages for the nodes.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Role *string `json:"role,omitempty"`
	// InstanceProfile is an existing instance profile to use instead of Role.
	// +kubebuilder:validation:MinLength=1
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// UserData is merged into the generated user data (a nodeadm NodeConfig for AL2023).
	// +optional
	UserData *string `json:"userData,omitempty"`
	// Tags put on instances, volumes and launch templates. EC2 takes at most
	// 50 tags per resource, keys of 1 to 128 characters not starting with
	// aws: (any case) and values of at most 256 characters; the keys
	// Nodesmith sets itself, and those EKS and Kubernetes reserve
	// (kubernetes.io/cluster/*, eks:eks-cluster-name), are refused.
	// +kubebuilder:validation:MaxProperties=50
	// +kubebuilder:validation:XValidation:message="empty tag keys are not allowed",rule="self.all(k, k != '')"
	// +kubebuilder:validation:XValidation:message="tag keys starting with aws: are reserved by AWS",messageExpression="'tag keys starting with aws: are reserved by AWS; got ' + self.filter(k, k.lowerAscii().startsWith('aws:'))[0]",rule="self.all(k, !k.lowerAscii().startsWith('aws:'))"
	// +kubebuilder:validation:XValidation:message="tag keys must be at most 128 characters",messageExpression="'tag keys must be at most 128 characters; got ' + self.filter(k, size(k) > 128)[0]",rule="self.all(k, size(k) <= 128)"
	// +kubebuilder:validation:XValidation:message="tag values must be at most 256 characters",messageExpression="'tag values must be at most 256 characters; the value of ' + self.filter(k, size(self[k]) > 256)[0] + ' is longer'",rule="self.all(k, size(self[k]) <= 256)"
	// +kubebuilder:validation:XValidation:message="tag keys nodesmith.sh/cluster, nodesmith.sh/nodepool, nodesmith.sh/nodeclaim, nodesmith.sh/launch-batch, aws.nodesmith.sh/ec2nodeclass and aws.nodesmith.sh/launch-template-hash are set by Nodesmith",messageExpression="'tag key ' + self.filter(k, k in ['nodesmith.sh/cluster','nodesmith.sh/nodepool','nodesmith.sh/nodeclaim','nodesmith.sh/launch-batch','aws.nodesmith.sh/ec2nodeclass','aws.nodesmith.sh/launch-template-hash'])[0] + ' is set by Nodesmith'",rule="self.all(k, !(k in ['nodesmith.sh/cluster','nodesmith.sh/nodepool','nodesmith.sh/nodeclaim','nodesmith.sh/launch-batch','aws.nodesmith.sh/ec2nodeclass','aws.nodesmith.sh/launch-template-hash']))"
	// +kubebuilder:validation:XValidation:message="tag keys kubernetes.io/cluster/* and eks:eks-cluster-name are reserved for the cluster",messageExpression="'tag key ' + self.filter(k, k.startsWith('kubernetes.io/cluster/') || k == 'eks:eks-cluster-name')[0] + ' is reserved for the cluster'",rule="self.all(k, !k.startsWith('kubernetes.io/cluster/') && k != 'eks:eks-cluster-name')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// BlockDeviceMappings of the instances (the root volume by default: 20Gi gp3, encrypted).
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	BlockDeviceMappings []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// MetadataOptions of the instances; IMDSv2 is required and the hop limit is 1 by default.
	// +kubebuilder:default={httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// AssociatePublicIPAddress overrides the subnet's setting.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// DetailedMonitoring turns on 1-minute CloudWatch metrics.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// Kubelet settings that also change what a node can hold.
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// CapacityReservationSelectorTerms select the capacity reservations
	// (ODCRs and Capacity Blocks) this class's nodes may launch into, as
	// capacity type "reserved"; terms are ORed. Only active reservations of
	// the cluster's region are used, open or targeted alike: a reserved
	// launch always names its reservation.
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations by id, or by
// tags and optionally the owning account.
//
// +kubebuilder:validation:XValidation:message="a capacity reservation selector term needs id or tags",rule="has(self.id) || has(self.tags)"
// +kubebuilder:validation:XValidation:message="id cannot be combined with other fields in a capacity reservation selector term",rule="!has(self.id) || !(has(self.tags) || has(self.ownerID))"
type CapacityReservationSelectorTerm struct {
	// Tags to match; a value of "*" matches any value.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a capacity reservation.
	// +kubebuilder:validation:Pattern=`^cr-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
	// OwnerID is the AWS account that owns the reservations (a shared
	// reservation's owner); any owner when unset.
	// +kubebuilder:validation:Pattern=`^[0-9]{12}$`
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
}

// SubnetSelectorTerm selects subnets by tags or by id.
//
// +kubebuilder:validation:XValidation:message="a subnet selector term needs tags or id",rule="has(self.tags) || has(self.id)"
// +kubebuilder:validation:XValidation:message="id cannot be combined with other fields in a subnet selector term",rule="!has(self.id) || !has(self.tags)"
type SubnetSelectorTerm struct {
	// Tags to match; a value of "*" matches any value.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a subnet.
	// +kubebuilder:validation:Pattern=`^subnet-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name.
//
// +kubebuilder:validation:XValidation:message="a security group selector term needs tags, id or name",rule="has(self.tags) || has(self.id) || has(self.name)"
// +kubebuilder:validation:XValidation:message="id cannot be combined with other fields in a security group selector term",rule="!has(self.id) || !(has(self.tags) || has(self.name))"
type SecurityGroupSelectorTerm struct {
	// Tags to match; a value of "*" matches any value.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a security group.
	// +kubebuilder:validation:Pattern=`^sg-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
	// Name (group-name) of a security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMISelectorTerm selects machine images.
//
// +kubebuilder:validation:XValidation:message="an AMI selector term needs alias, id, tags or name",rule="has(self.alias) || has(self.id) || has(self.tags) || has(self.name)"
// +kubebuilder:validation:XValidation:message="alias cannot be combined with other fields in an AMI selector term",rule="!has(self.alias) || !(has(self.id) || has(self.tags) || has(self.name) || has(self.owner))"
// +kubebuilder:validation:XValidation:message="id cannot be combined with other fields in an AMI selector term",rule="!has(self.id) || !(has(self.alias) || has(self.tags) || has(self.name) || has(self.owner))"
type AMISelectorTerm struct {
	// Alias is family@version, e.g. al2023@latest or bottlerocket@v1.30.0.
	// +kubebuilder:validation:Pattern=`^(?i)(al2023|bottlerocket)@(latest|v[0-9a-z.\-]+)$`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags to match.
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of an image.
	// +kubebuilder:validation:Pattern=`^ami-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
	// Name of an image (wildcards allowed).
	// +optional
	Name string `json:"name,omitempty"`
	// Owner account id or alias (self, amazon) of images selected by name or tags.
	// +optional
	Owner string `json:"owner,omitempty"`
}

// BlockDeviceMapping attaches an EBS volume.
type BlockDeviceMapping struct {
	// DeviceName, e.g. /dev/xvda.
	// +required
	DeviceName *string `json:"deviceName"`
	// EBS volume settings.
	// +required
	EBS *BlockDevice `json:"ebs"`
	// RootVolume marks the volume the kubelet uses for ephemeral storage.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume.
type BlockDevice struct {
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeSize, e.g. 20Gi.
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// VolumeType: standard, io1, io2, gp2, sc1, st1 or gp3.
	// +kubebuilder:validation:Enum=standard;io1;io2;gp2;sc1;st1;gp3
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// MetadataOptions configure the instance metadata service.
type MetadataOptions struct {
	// +kubebuilder:validation:Enum=enabled;disabled
	// +kubebuilder:default=enabled
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// +kubebuilder:validation:Enum=enabled;disabled
	// +kubebuilder:default=disabled
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// +kubebuilder:validation:Enum=required;optional
	// +kubebuilder:default=required
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// KubeletConfiguration holds the kubelet settings that change a node's capacity.
//
// +kubebuilder:validation:XValidation:message="evictionHard keys must be memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available",rule="!has(self.evictionHard) || self.evictionHard.all(k, k in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
type KubeletConfiguration struct {
	// MaxPods overrides the ENI-limited pod count.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps pods at podsPerCore × vCPU.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved resources (cpu, memory, ephemeral-storage, pid).
	// +kubebuilder:validation:XValidation:message="systemReserved keys must be cpu, memory, ephemeral-storage or pid",rule="self.all(k, k in ['cpu','memory','ephemeral-storage','pid'])"
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved resources (cpu, memory, ephemeral-storage, pid); computed from the instance type when unset.
	// +kubebuilder:validation:XValidation:message="kubeReserved keys must be cpu, memory, ephemeral-storage or pid",rule="self.all(k, k in ['cpu','memory','ephemeral-storage','pid'])"
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard thresholds, e.g. memory.available: 100Mi.
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// ClusterDNS server addresses.
	// +listType=atomic
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
}

// EC2NodeClassStatus is what the selectors resolved to.
type EC2NodeClassStatus struct {
	// +listType=atomic
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// +listType=atomic
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// +listType=atomic
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile the instances launch with.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// CapacityReservations are the active reservations the selector terms
	// resolved to, with what each had free when last read.
	// +listType=atomic
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// Conditions: SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady, CapacityReservationsReady, Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// +required
	ID string `json:"id"`
	// +required
	Zone string `json:"zone"`
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// CapacityReservation is a resolved capacity reservation.
type CapacityReservation struct {
	// +kubebuilder:validation:Pattern=`^cr-[0-9a-z]+$`
	// +required
	ID string `json:"id"`
	// ReservationType is default (an ODCR) or capacity-block.
	// +kubebuilder:validation:Enum=default;capacity-block
	// +required
	ReservationType string `json:"reservationType"`
	// +required
	InstanceType string `json:"instanceType"`
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// AvailableInstanceCount is how many instances the reservation had free.
	// +kubebuilder:validation:Minimum=0
	// +required
	AvailableInstanceCount int64 `json:"availableInstanceCount"`
	// InstanceMatchCriteria is open or targeted.
	// +kubebuilder:validation:Enum=open;targeted
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
	// OwnerID is the owning account.
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// EndTime is when the reservation ends; none for an open-ended ODCR.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Interruptible is true for an interruptible reservation: its owner
	// may reclaim the capacity, EC2 warning the instances in it two minutes
	// before it terminates them (the interruption queue's capacity
	// reservation warning).
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// +required
	ID string `json:"id"`
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a resolved image and the instance requirements it serves (e.g. arch).
type AMI struct {
	// +required
	ID string `json:"id"`
	// +optional
	Name string `json:"name,omitempty"`
	// Architecture is amd64 or arm64.
	// +optional
	Architecture string `json:"architecture,omitempty"`
	// Requirements an instance type's labels must meet to launch with this
	// image (e.g. arch In [amd64] and, for the NVIDIA variant, the GPU count
	// label Exists). Each instance type launches with the first image it
	// meets; none given means the architecture alone decides.
	// +listType=atomic
	// +optional
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
}

// EC2NodeClass condition types.
const (
	ConditionSubnetsReady         = "SubnetsReady"
	ConditionSecurityGroupsReady  = "SecurityGroupsReady"
	ConditionAMIsReady            = "AMIsReady"
	ConditionInstanceProfileReady = "InstanceProfileReady"
	// ConditionCapacityReservationsReady is True once the reservation
	// selector terms were read (none selected is still ready).
	ConditionCapacityReservationsReady = "CapacityReservationsReady"
	ConditionReady                     = "Ready"
)

// +kubebuilder:object:root=true

// EC2NodeClassList is a list of EC2NodeClasses.
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}
