package fakeaws

import (
	"strconv"
	"strings"
)

// specsSnapshot returns the specs in registration order and the pools.
func (w *World) specsSnapshot() ([]Spec, []Pool) {
	w.mu.Lock()
	out := make([]Spec, 0, len(w.typeOrd))
	for _, n := range w.typeOrd {
		out = append(out, w.specs[n])
	}
	w.mu.Unlock()
	return out, w.Pools()
}

// typeFacts are the derived values instanceTypeXML renders and the
// DescribeInstanceTypes filters match, computed in one place so they agree.
type typeFacts struct {
	threads, cores int
	perf           string
	usage          []string
}

func factsOf(sp Spec) typeFacts {
	f := typeFacts{threads: 2, perf: sp.NetworkPerformance, usage: []string{"on-demand", "spot"}}
	if sp.Arch == "arm64" || sp.VCPU == 1 {
		f.threads = 1
	}
	f.cores = max(1, sp.VCPU/f.threads)
	if f.perf == "" {
		f.perf = "Up to 10 Gigabit"
	}
	if sp.SpotUnsupported {
		f.usage = f.usage[:1]
	}
	return f
}

const clockSpeedGHz = "3.1"

// specAttr answers the DescribeInstanceTypes filters from what
// instanceTypeXML renders. Filters on parts of the answer the fake does not
// render (EBS bandwidth, Nitro TPM, valid core counts, …) are left unknown,
// so checkFilters refuses them as not simulated.
func specAttr(sp Spec) attrFunc {
	f := factsOf(sp)
	b := strconv.FormatBool
	i := strconv.Itoa
	storage := sp.LocalNVMeGB > 0
	return func(n string) ([]string, bool) {
		switch n {
		case "instance-type":
			return []string{sp.Name}, true
		case "processor-info.supported-architecture":
			return []string{sp.Arch}, true
		case "processor-info.sustained-clock-speed-in-ghz":
			return []string{clockSpeedGHz}, true
		case "current-generation":
			return []string{"true"}, true
		case "free-tier-eligible", "hibernation-supported", "network-info.efa-supported":
			return []string{"false"}, true
		case "auto-recovery-supported", "dedicated-hosts-supported", "network-info.ipv6-supported":
			return []string{"true"}, true
		case "burstable-performance-supported":
			return []string{b(strings.HasPrefix(sp.Name, "t"))}, true
		case "bare-metal":
			return []string{b(sp.BareMetal)}, true
		case "hypervisor":
			if sp.Hypervisor == "" || sp.BareMetal {
				return nil, true
			}
			return []string{sp.Hypervisor}, true
		case "vcpu-info.default-vcpus":
			return []string{i(sp.VCPU)}, true
		case "vcpu-info.default-cores":
			return []string{i(f.cores)}, true
		case "vcpu-info.default-threads-per-core":
			return []string{i(f.threads)}, true
		case "memory-info.size-in-mib":
			return []string{strconv.FormatInt(sp.MemoryMiB, 10)}, true
		case "supported-usage-class":
			return f.usage, true
		case "supported-root-device-type":
			return []string{"ebs"}, true
		case "supported-virtualization-type":
			return []string{"hvm"}, true
		case "supported-boot-mode":
			return []string{"legacy-bios", "uefi"}, true
		case "instance-storage-supported":
			return []string{b(storage)}, true
		case "instance-storage-info.total-size-in-gb", "instance-storage-info.disk.size-in-gb":
			if !storage {
				return nil, true
			}
			return []string{strconv.FormatInt(sp.LocalNVMeGB, 10)}, true
		case "instance-storage-info.disk.count":
			if !storage {
				return nil, true
			}
			return []string{"1"}, true
		case "instance-storage-info.disk.type":
			if !storage {
				return nil, true
			}
			return []string{"ssd"}, true
		case "instance-storage-info.nvme-support":
			if !storage {
				return nil, true
			}
			return []string{"required"}, true
		case "ebs-info.ebs-optimized-support":
			return []string{"default"}, true
		case "ebs-info.encryption-support":
			return []string{"supported"}, true
		case "ebs-info.nvme-support", "network-info.ena-support":
			return []string{"required"}, true
		case "network-info.network-performance":
			return []string{f.perf}, true
		case "network-info.maximum-network-interfaces":
			return []string{i(sp.MaxENIs)}, true
		case "network-info.maximum-network-cards":
			return []string{"1"}, true
		case "network-info.ipv4-addresses-per-interface", "network-info.ipv6-addresses-per-interface":
			return []string{i(sp.IPv4PerENI)}, true
		case "network-info.efa-info.maximum-efa-interfaces":
			return nil, true // EFA is never supported
		}
		return nil, false
	}
}

func (s *Server) describeInstanceTypes(p params) (func(x *xmlw), error) {
	names := p.list("InstanceType")
	specs, _ := s.w.specsSnapshot()
	if err := requireKnown(names, len(specs), func(i int) string { return specs[i].Name }, "InvalidInstanceType", "The following supplied instance types do not exist: [%s]"); err != nil {
		return nil, err
	}
	fs := p.filters()
	if err := checkFilters(fs, specAttr(Spec{}), documentedInstanceTypeFilters); err != nil {
		return nil, err
	}
	var out []Spec
	for _, sp := range specs {
		if len(names) > 0 && !contains(names, sp.Name) {
			continue
		}
		ok, err := matchAll(fs, specAttr(sp), nil)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, sp)
		}
	}
	from, to, next, err := page(p, len(out), 100, 5, 100)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("instanceTypeSet")
		for _, sp := range out[from:to] {
			x.open("item")
			instanceTypeXML(x, sp)
			x.close("item")
		}
		x.close("instanceTypeSet")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

func instanceTypeXML(x *xmlw, sp Spec) {
	x.leaf("instanceType", sp.Name)
	x.leafBool("currentGeneration", true)
	x.leafBool("freeTierEligible", false)
	f := factsOf(sp)
	x.items("supportedUsageClasses", f.usage)
	x.items("supportedRootDeviceTypes", []string{"ebs"})
	x.items("supportedVirtualizationTypes", []string{"hvm"})
	x.leafBool("bareMetal", sp.BareMetal)
	if sp.Hypervisor != "" && !sp.BareMetal {
		x.leaf("hypervisor", sp.Hypervisor)
	}
	x.open("processorInfo")
	x.items("supportedArchitectures", []string{sp.Arch})
	x.leaf("sustainedClockSpeedInGhz", clockSpeedGHz)
	x.close("processorInfo")
	x.open("vCpuInfo")
	x.leafInt("defaultVCpus", sp.VCPU)
	x.leafInt("defaultCores", f.cores)
	x.leafInt("defaultThreadsPerCore", f.threads)
	x.close("vCpuInfo")
	x.open("memoryInfo")
	x.leaf("sizeInMiB", strconv.FormatInt(sp.MemoryMiB, 10))
	x.close("memoryInfo")
	x.leafBool("instanceStorageSupported", sp.LocalNVMeGB > 0)
	if sp.LocalNVMeGB > 0 {
		x.open("instanceStorageInfo")
		x.leaf("totalSizeInGB", strconv.FormatInt(sp.LocalNVMeGB, 10))
		x.open("disks")
		x.open("item")
		x.leaf("sizeInGB", strconv.FormatInt(sp.LocalNVMeGB, 10))
		x.leafInt("count", 1)
		x.leaf("type", "ssd")
		x.close("item")
		x.close("disks")
		x.leaf("nvmeSupport", "required")
		x.close("instanceStorageInfo")
	}
	x.open("ebsInfo")
	x.leaf("ebsOptimizedSupport", "default")
	x.leaf("encryptionSupport", "supported")
	x.leaf("nvmeSupport", "required")
	x.close("ebsInfo")
	x.open("networkInfo")
	perf := f.perf
	x.leaf("networkPerformance", perf)
	x.leafInt("maximumNetworkInterfaces", sp.MaxENIs)
	x.leafInt("maximumNetworkCards", 1)
	x.leafInt("defaultNetworkCardIndex", 0)
	x.open("networkCards")
	x.open("item")
	x.leafInt("networkCardIndex", 0)
	x.leaf("networkPerformance", perf)
	x.leafInt("maximumNetworkInterfaces", sp.MaxENIs)
	x.close("item")
	x.close("networkCards")
	x.leafInt("ipv4AddressesPerInterface", sp.IPv4PerENI)
	x.leafInt("ipv6AddressesPerInterface", sp.IPv4PerENI)
	x.leafBool("ipv6Supported", true)
	x.leaf("enaSupport", "required")
	x.leafBool("efaSupported", false)
	x.close("networkInfo")
	if sp.GPUCount > 0 {
		x.open("gpuInfo")
		x.open("gpus")
		x.open("item")
		x.leaf("name", sp.GPUName)
		x.leaf("manufacturer", sp.GPUMfr)
		x.leafInt("count", sp.GPUCount)
		x.open("memoryInfo")
		x.leaf("sizeInMiB", strconv.FormatInt(sp.GPUMemMiB, 10))
		x.close("memoryInfo")
		x.close("item")
		x.close("gpus")
		x.leaf("totalGpuMemoryInMiB", strconv.FormatInt(sp.GPUMemMiB*int64(sp.GPUCount), 10))
		x.close("gpuInfo")
	}
	x.leafBool("hibernationSupported", false)
	x.leafBool("burstablePerformanceSupported", strings.HasPrefix(sp.Name, "t"))
	x.leafBool("dedicatedHostsSupported", true)
	x.leafBool("autoRecoverySupported", true)
	x.items("supportedBootModes", []string{"legacy-bios", "uefi"})
}

func (s *Server) describeInstanceTypeOfferings(p params) (func(x *xmlw), error) {
	lt := p.get("LocationType")
	if lt == "" {
		lt = "region"
	}
	if lt != "region" && lt != "availability-zone" && lt != "availability-zone-id" {
		return nil, apiErr(400, "InvalidParameterValue", "Invalid value '%s' for LocationType", lt)
	}
	specs, pools := s.w.specsSnapshot()
	offered := map[PoolKey]bool{}
	for _, pl := range pools {
		offered[PoolKey{InstanceType: pl.InstanceType, Zone: pl.Zone}] = true
	}
	type offering struct{ typ, loc string }
	var all []offering
	for _, sp := range specs {
		switch lt {
		case "region":
			all = append(all, offering{sp.Name, s.w.opts.Region})
		default:
			for _, z := range s.w.opts.Zones {
				if !offered[PoolKey{InstanceType: sp.Name, Zone: z}] {
					continue
				}
				loc := z
				if lt == "availability-zone-id" {
					loc = s.w.zoneID(z)
				}
				all = append(all, offering{sp.Name, loc})
			}
		}
	}
	fs := p.filters()
	var out []offering
	for _, o := range all {
		ok, err := matchAll(fs, func(n string) ([]string, bool) {
			switch n {
			case "location":
				return []string{o.loc}, true
			case "instance-type":
				return []string{o.typ}, true
			}
			return nil, false
		}, nil)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, o)
		}
	}
	from, to, next, err := page(p, len(out), 1000, 5, 1000)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("instanceTypeOfferingSet")
		for _, o := range out[from:to] {
			x.open("item")
			x.leaf("instanceType", o.typ)
			x.leaf("locationType", lt)
			x.leaf("location", o.loc)
			x.close("item")
		}
		x.close("instanceTypeOfferingSet")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

func (s *Server) describeSpotPriceHistory(p params) (func(x *xmlw), error) {
	types := p.list("InstanceType")
	zone := p.get("AvailabilityZone")
	descs := p.list("ProductDescription")
	if len(descs) == 0 {
		descs = []string{"Linux/UNIX"}
	}
	_, pools := s.w.specsSnapshot()
	now := s.w.Now()
	fs := p.filters()
	type entry struct {
		pool Pool
		desc string
	}
	var out []entry
	for _, d := range descs {
		if d != "Linux/UNIX" && d != "Linux/UNIX (Amazon VPC)" {
			continue // only Linux is simulated
		}
		for _, pl := range pools {
			if pl.CapacityType != CapacitySpot || len(types) > 0 && !contains(types, pl.InstanceType) || zone != "" && pl.Zone != zone {
				continue
			}
			ok, err := matchAll(fs, func(n string) ([]string, bool) {
				switch n {
				case "instance-type":
					return []string{pl.InstanceType}, true
				case "availability-zone":
					return []string{pl.Zone}, true
				case "product-description":
					return []string{d}, true
				}
				return nil, false
			}, nil)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, entry{pl, d})
			}
		}
	}
	from, to, next, err := page(p, len(out), 1000, 5, 1000)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("spotPriceHistorySet")
		for _, e := range out[from:to] {
			x.open("item")
			x.leaf("instanceType", e.pool.InstanceType)
			x.leaf("productDescription", e.desc)
			x.leaf("spotPrice", strconv.FormatFloat(e.pool.Price, 'f', 6, 64))
			x.leafTime("timestamp", now)
			x.leaf("availabilityZone", e.pool.Zone)
			x.close("item")
		}
		x.close("spotPriceHistorySet")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}
