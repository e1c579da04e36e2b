package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
)

// The snapshot is data, not code: see data/SOURCES.md for where each field
// comes from and data/instance-types-us-east-1.meta.json for field notes.
//
//go:embed data/instance-types-us-east-1.json
var snapshotJSON []byte

// Architectures in AWS spelling, as Spec.Architecture carries them.
const (
	ArchX86_64 = "x86_64"
	ArchARM64  = "arm64"
)

// Spec is one instance type as the cloud describes it: the facts, before any
// Kubernetes math. The embedded snapshot is a list of these; the AWS provider
// fills the same struct from DescribeInstanceTypes and pricing calls. Unknown
// facts are zero values (the snapshot writes them as null).
type Spec struct {
	Name       string `json:"name"`
	Family     string `json:"family"`
	Category   string `json:"category"`
	Generation int    `json:"generation"`
	Size       string `json:"size"`
	// Architecture in AWS spelling: x86_64 or arm64. Empty when unknown.
	Architecture string `json:"architecture"`

	VCPUs                int    `json:"vcpus"`
	MemoryMiB            int64  `json:"memory_mib"`
	CPUManufacturer      string `json:"cpu_manufacturer"`
	CPUSustainedClockMHz int    `json:"cpu_sustained_clock_mhz"`

	GPUCount        int    `json:"gpu_count"`
	GPUName         string `json:"gpu_name"`
	GPUManufacturer string `json:"gpu_manufacturer"`
	GPUMemoryMiB    int64  `json:"gpu_memory_mib"`

	AcceleratorCount        int    `json:"accelerator_count"`
	AcceleratorName         string `json:"accelerator_name"`
	AcceleratorManufacturer string `json:"accelerator_manufacturer"`

	Hypervisor        string `json:"hypervisor"`
	BareMetal         bool   `json:"bare_metal"`
	Flex              bool   `json:"flex"`
	InstanceStorageGB int64  `json:"instance_storage_gb"`

	// MaxENIs is the total over all network cards.
	MaxENIs int `json:"max_enis"`
	// DefaultCardENIs is the ENI limit of the default network card; when
	// zero it is taken as MaxENIs split evenly over NetworkCards (which
	// matches every multi-card type in the snapshot).
	DefaultCardENIs      int   `json:"default_card_enis,omitempty"`
	NetworkCards         int   `json:"network_cards"`
	IPv4PerENI           int   `json:"ipv4_per_eni"`
	BranchENIs           int   `json:"branch_enis"`
	EFACount             int   `json:"efa_count"`
	TrunkingCompatible   bool  `json:"trunking_compatible"`
	EncryptionInTransit  bool  `json:"encryption_in_transit"`
	NetworkBandwidthMbps int64 `json:"network_bandwidth_mbps"`
	EBSBandwidthMbps     int64 `json:"ebs_bandwidth_mbps"`
	// MaxPodsENIFormula is the snapshot's MaxENIs × (IPv4PerENI − 1) + 2,
	// over all cards; informational (we compute pods from the default card).
	MaxPodsENIFormula int `json:"max_pods_eni_formula"`

	PreviousGeneration bool `json:"likely_previous_generation"`
	// OfferedInRegion is true when the region has an on-demand Linux price
	// (the snapshot's region is us-east-1; live specs mean the provider's).
	OfferedInRegion bool `json:"offered_in_us_east_1"`
	// SupportedUsageClasses holds "on-demand" and/or "spot".
	SupportedUsageClasses []string `json:"supported_usage_classes"`
	// OnDemandPrice in USD per hour; zero when unknown.
	OnDemandPrice float64 `json:"on_demand_price_usd_hr"`
	// SpotPrice in USD per hour: in the snapshot an estimate, on-demand ×
	// (1 − advisor savings); zero when unknown.
	SpotPrice        float64           `json:"spot_price_estimated_usd_hr"`
	SpotInterruption *SpotInterruption `json:"spot_interruption"`

	// ReferenceAllocatable is a published allocatable figure to check our
	// overhead math against; never an input.
	ReferenceAllocatable *ReferenceAllocatable `json:"reference_allocatable_eks_al2023"`
}

// SpotInterruption is a Spot Instance Advisor entry.
type SpotInterruption struct {
	// Index is 0 (<5%) … 4 (>20%).
	Index int `json:"index"`
	// Label is the advisor's range text: "<5%", "5-10%", … ">20%".
	Label      string `json:"label"`
	SavingsPct int    `json:"savings_vs_on_demand_pct"`
}

// ReferenceAllocatable is allocatable as published for EKS AL2023 defaults.
type ReferenceAllocatable struct {
	CPUMillicores       int64 `json:"cpu_millicores"`
	MemoryMiB           int64 `json:"memory_mib"`
	EphemeralStorageMiB int64 `json:"ephemeral_storage_mib"`
	Pods                int64 `json:"pods"`
}

// SupportsUsageClass reports whether the type can be bought as class (spot, on-demand).
func (s *Spec) SupportsUsageClass(class string) bool {
	for _, c := range s.SupportedUsageClasses {
		if c == class {
			return true
		}
	}
	return false
}

// ENIsOnDefaultCard is the ENI count that limits pod IPs: pods get addresses
// from the default network card only.
func (s *Spec) ENIsOnDefaultCard() int {
	if s.DefaultCardENIs > 0 {
		return s.DefaultCardENIs
	}
	if s.NetworkCards > 1 {
		return s.MaxENIs / s.NetworkCards
	}
	return s.MaxENIs
}

// Complete reports whether the spec has the facts a node needs: an
// architecture and a CPU and memory size. The snapshot has a few old types
// (p3.2xlarge, g3, f1, u-*tb1 …) with only a price and a size.
func (s *Spec) Complete() bool {
	return s.Architecture != "" && s.VCPUs > 0 && s.MemoryMiB > 0
}

var parsedSpecs = sync.OnceValues(func() ([]Spec, error) { return parseSpecs(snapshotJSON) })

// Specs returns the embedded snapshot's records, in file order (by name).
// The slice is the caller's; the pointers inside (SpotInterruption,
// ReferenceAllocatable, SupportedUsageClasses) are shared and read-only.
func Specs() ([]Spec, error) {
	specs, err := parsedSpecs()
	if err != nil {
		return nil, err
	}
	out := make([]Spec, len(specs))
	copy(out, specs)
	return out, nil
}

func parseSpecs(raw []byte) ([]Spec, error) {
	var specs []Spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("decoding the instance-type snapshot: %w", err)
	}
	for i := range specs {
		if specs[i].Name == "" {
			return nil, fmt.Errorf("decoding the instance-type snapshot: record %d has no name", i)
		}
	}
	return specs, nil
}
