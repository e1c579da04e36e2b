package fakeaws

import (
	"time"
)

// Capacity types as EC2 spells them in CreateFleet (DefaultTargetCapacityType)
// and as Nodesmith spells them in labels.
const (
	CapacitySpot     = "spot"
	CapacityOnDemand = "on-demand"
	// CapacityBlock is CreateFleet's DefaultTargetCapacityType for
	// launches into Capacity Blocks; their instances are on-demand.
	CapacityBlock = "capacity-block"
)

// Instance states (EC2 names and codes).
const (
	StatePending      = "pending"
	StateRunning      = "running"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"
)

func stateCode(s string) int {
	switch s {
	case StatePending:
		return 0
	case StateRunning:
		return 16
	case StateShuttingDown:
		return 32
	case StateTerminated:
		return 48
	case "stopping":
		return 64
	case "stopped":
		return 80
	}
	return 0
}

// Spec is the part of an instance type the fake needs: enough to answer
// DescribeInstanceTypes and to price pools.
type Spec struct {
	Name       string
	Arch       string // EC2 spelling: x86_64 | arm64
	VCPU       int
	MemoryMiB  int64
	GPUCount   int
	GPUName    string
	GPUMfr     string
	GPUMemMiB  int64
	MaxENIs    int
	IPv4PerENI int
	// NetworkPerformance is the EC2 description ("Up to 12.5 Gigabit").
	NetworkPerformance string
	Hypervisor         string
	BareMetal          bool
	LocalNVMeGB        int64
	OnDemandPrice      float64
	// SpotPrice is the base spot price; zones vary around it deterministically
	// unless ZoneSpotPrices names the zone's price.
	SpotPrice      float64
	ZoneSpotPrices map[string]float64
	// Zones limits where the type is offered; empty means every zone.
	Zones []string
	// SpotUnsupported marks types sold on demand only.
	SpotUnsupported bool
}

// PoolKey names one capacity pool.
type PoolKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// Pool is one capacity pool: spare capacity (in instances), price, and an ICE window.
type Pool struct {
	PoolKey
	Spare    int
	Price    float64
	ICEUntil time.Time
}

// Instance is a snapshot of one simulated instance.
type Instance struct {
	ID               string
	Type             string
	Arch             string
	Zone             string
	CapacityType     string
	State            string
	LaunchTime       time.Time
	StateChangedAt   time.Time
	Tags             map[string]string
	SubnetID         string
	VpcID            string
	ImageID          string
	SecurityGroupIDs []string
	PrivateIP        string
	Price            float64
	LaunchTemplateID string
	// UserData is the launch template's user data, base64-decoded.
	UserData      string
	FleetID       string
	ReservationID string
	// CapacityReservationID is the capacity reservation the instance
	// launched into ("" for none).
	CapacityReservationID string
	ClientToken           string
	// InterruptAt is when a pending spot interruption terminates the instance (zero if none).
	InterruptAt time.Time
	// BootAt is when a pending instance becomes running (LaunchTime plus
	// the world's BootDelay and this instance's share of BootJitter).
	BootAt time.Time
}

func (i Instance) clone() Instance {
	c := i
	c.Tags = cloneTags(i.Tags)
	c.SecurityGroupIDs = append([]string(nil), i.SecurityGroupIDs...)
	return c
}

// Subnet is a simulated VPC subnet.
type Subnet struct {
	ID, VpcID, Zone, ZoneID, CIDR string
	FreeIPs                       int
	Tags                          map[string]string
	nextHost                      int
}

// SecurityGroup is a simulated security group.
type SecurityGroup struct {
	ID, Name, Description, VpcID string
	Tags                         map[string]string
}

// Image is a simulated AMI.
type Image struct {
	ID, Name, Description, Arch, OwnerID, OwnerAlias string
	CreationDate                                     time.Time
	Tags                                             map[string]string
	// SSMParameter is the public parameter that resolves to this image, if any.
	SSMParameter string
}

// LaunchTemplate is a simulated launch template (one version).
type LaunchTemplate struct {
	ID, Name         string
	CreateTime       time.Time
	ImageID          string
	InstanceType     string
	UserData         string // decoded
	SecurityGroupIDs []string
	// InstanceTags are the tags the template's TagSpecification puts on instances.
	InstanceTags map[string]string
	Tags         map[string]string
	// Data holds every LaunchTemplateData.* form field as sent, for tests that inspect it.
	Data map[string]string
}

// EventKind is what happened to an instance, for Subscribe.
type EventKind string

// Event kinds.
const (
	EventLaunched    EventKind = "Launched"
	EventRunning     EventKind = "Running"
	EventTerminating EventKind = "Terminating"
	EventTerminated  EventKind = "Terminated"
	EventInterrupted EventKind = "Interrupted" // spot interruption warning sent
	EventRebalance   EventKind = "Rebalance"
	EventScheduled   EventKind = "ScheduledChange"
)

// Event is delivered synchronously to subscribers, outside the world lock.
type Event struct {
	Kind     EventKind
	Time     time.Time
	Instance Instance
}

func cloneTags(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
