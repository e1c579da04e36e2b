package fakeaws_test

import (
	"fmt"
	"sort"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Each filter must select exactly the types whose answer, as the SDK parsed
// it, carries the filtered value: the filter and the rendered field agree.
func TestDescribeInstanceTypesFiltersAgreeWithTheAnswer(t *testing.T) {
	e := newEnv(t)
	all, err := e.ec2.DescribeInstanceTypes(e.ctx, &ec2.DescribeInstanceTypesInput{})
	if err != nil {
		t.Fatal(err)
	}
	b := func(v *bool) string { return strconv.FormatBool(aws.ToBool(v)) }
	i32 := func(v *int32) string { return strconv.Itoa(int(aws.ToInt32(v))) }
	tests := []struct {
		filter string
		value  func(it ec2types.InstanceTypeInfo) []string
	}{
		{"instance-type", func(it ec2types.InstanceTypeInfo) []string { return []string{string(it.InstanceType)} }},
		{"processor-info.supported-architecture", func(it ec2types.InstanceTypeInfo) []string {
			return []string{string(it.ProcessorInfo.SupportedArchitectures[0])}
		}},
		{"vcpu-info.default-vcpus", func(it ec2types.InstanceTypeInfo) []string { return []string{i32(it.VCpuInfo.DefaultVCpus)} }},
		{"vcpu-info.default-cores", func(it ec2types.InstanceTypeInfo) []string { return []string{i32(it.VCpuInfo.DefaultCores)} }},
		{"vcpu-info.default-threads-per-core", func(it ec2types.InstanceTypeInfo) []string {
			return []string{i32(it.VCpuInfo.DefaultThreadsPerCore)}
		}},
		{"memory-info.size-in-mib", func(it ec2types.InstanceTypeInfo) []string {
			return []string{strconv.FormatInt(aws.ToInt64(it.MemoryInfo.SizeInMiB), 10)}
		}},
		{"instance-storage-supported", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.InstanceStorageSupported)} }},
		{"burstable-performance-supported", func(it ec2types.InstanceTypeInfo) []string {
			return []string{b(it.BurstablePerformanceSupported)}
		}},
		{"bare-metal", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.BareMetal)} }},
		{"current-generation", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.CurrentGeneration)} }},
		{"hypervisor", func(it ec2types.InstanceTypeInfo) []string { return []string{string(it.Hypervisor)} }},
		{"network-info.network-performance", func(it ec2types.InstanceTypeInfo) []string {
			return []string{aws.ToString(it.NetworkInfo.NetworkPerformance)}
		}},
		{"network-info.maximum-network-interfaces", func(it ec2types.InstanceTypeInfo) []string {
			return []string{i32(it.NetworkInfo.MaximumNetworkInterfaces)}
		}},
		{"network-info.ipv4-addresses-per-interface", func(it ec2types.InstanceTypeInfo) []string {
			return []string{i32(it.NetworkInfo.Ipv4AddressesPerInterface)}
		}},
		{"network-info.efa-supported", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.NetworkInfo.EfaSupported)} }},
		{"supported-usage-class", func(it ec2types.InstanceTypeInfo) []string {
			var out []string
			for _, c := range it.SupportedUsageClasses {
				out = append(out, string(c))
			}
			return out
		}},
		{"instance-storage-info.total-size-in-gb", func(it ec2types.InstanceTypeInfo) []string {
			if it.InstanceStorageInfo == nil {
				return nil
			}
			return []string{strconv.FormatInt(aws.ToInt64(it.InstanceStorageInfo.TotalSizeInGB), 10)}
		}},
		{"ebs-info.encryption-support", func(it ec2types.InstanceTypeInfo) []string {
			return []string{string(it.EbsInfo.EncryptionSupport)}
		}},
		{"supported-boot-mode", func(it ec2types.InstanceTypeInfo) []string {
			var out []string
			for _, m := range it.SupportedBootModes {
				out = append(out, string(m))
			}
			return out
		}},
		// The filters whose value is the same for every simulated type: the
		// filter must still say what the rendered answer says.
		{"free-tier-eligible", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.FreeTierEligible)} }},
		{"hibernation-supported", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.HibernationSupported)} }},
		{"auto-recovery-supported", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.AutoRecoverySupported)} }},
		{"dedicated-hosts-supported", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.DedicatedHostsSupported)} }},
		{"processor-info.sustained-clock-speed-in-ghz", func(it ec2types.InstanceTypeInfo) []string {
			if it.ProcessorInfo.SustainedClockSpeedInGhz == nil {
				return nil
			}
			return []string{strconv.FormatFloat(*it.ProcessorInfo.SustainedClockSpeedInGhz, 'f', -1, 64)}
		}},
		{"supported-root-device-type", func(it ec2types.InstanceTypeInfo) []string {
			var out []string
			for _, d := range it.SupportedRootDeviceTypes {
				out = append(out, string(d))
			}
			return out
		}},
		{"supported-virtualization-type", func(it ec2types.InstanceTypeInfo) []string {
			var out []string
			for _, v := range it.SupportedVirtualizationTypes {
				out = append(out, string(v))
			}
			return out
		}},
		{"network-info.ipv6-supported", func(it ec2types.InstanceTypeInfo) []string { return []string{b(it.NetworkInfo.Ipv6Supported)} }},
		{"network-info.ena-support", func(it ec2types.InstanceTypeInfo) []string { return []string{string(it.NetworkInfo.EnaSupport)} }},
		{"network-info.maximum-network-cards", func(it ec2types.InstanceTypeInfo) []string {
			return []string{i32(it.NetworkInfo.MaximumNetworkCards)}
		}},
		{"network-info.ipv6-addresses-per-interface", func(it ec2types.InstanceTypeInfo) []string {
			return []string{i32(it.NetworkInfo.Ipv6AddressesPerInterface)}
		}},
		{"ebs-info.ebs-optimized-support", func(it ec2types.InstanceTypeInfo) []string {
			return []string{string(it.EbsInfo.EbsOptimizedSupport)}
		}},
		{"ebs-info.nvme-support", func(it ec2types.InstanceTypeInfo) []string { return []string{string(it.EbsInfo.NvmeSupport)} }},
		{"instance-storage-info.nvme-support", func(it ec2types.InstanceTypeInfo) []string {
			if it.InstanceStorageInfo == nil {
				return nil
			}
			return []string{string(it.InstanceStorageInfo.NvmeSupport)}
		}},
		{"instance-storage-info.disk.count", func(it ec2types.InstanceTypeInfo) []string {
			return disks(it, func(d ec2types.DiskInfo) string { return i32(d.Count) })
		}},
		{"instance-storage-info.disk.size-in-gb", func(it ec2types.InstanceTypeInfo) []string {
			return disks(it, func(d ec2types.DiskInfo) string { return strconv.FormatInt(aws.ToInt64(d.SizeInGB), 10) })
		}},
		{"instance-storage-info.disk.type", func(it ec2types.InstanceTypeInfo) []string {
			return disks(it, func(d ec2types.DiskInfo) string { return string(d.Type) })
		}},
	}
	for _, tt := range tests {
		values := map[string]bool{}
		for _, it := range all.InstanceTypes {
			for _, v := range tt.value(it) {
				values[v] = true
			}
		}
		if len(values) == 0 {
			t.Errorf("%s: no type carries a value; the row tests nothing", tt.filter)
		}
		for v := range values {
			var want []string
			for _, it := range all.InstanceTypes {
				for _, got := range tt.value(it) {
					if got == v {
						want = append(want, string(it.InstanceType))
						break
					}
				}
			}
			out, err := e.ec2.DescribeInstanceTypes(e.ctx, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{filter(tt.filter, v)}})
			if err != nil {
				t.Errorf("%s=%s: %v", tt.filter, v, err)
				continue
			}
			var got []string
			for _, it := range out.InstanceTypes {
				got = append(got, string(it.InstanceType))
			}
			sort.Strings(got)
			sort.Strings(want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s=%s selected %v, the answer says %v", tt.filter, v, got, want)
			}
		}
	}
	for name, f := range map[string]string{"unknown": "colour", "documented, not simulated": "nitro-tpm-support"} {
		if _, err := e.ec2.DescribeInstanceTypes(e.ctx, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{filter(f, "x")}}); apiCode(err) != "InvalidParameterValue" {
			t.Errorf("%s filter %s: %v", name, f, err)
		}
	}
}

// disks is one value per local disk of the type, none without local storage.
func disks(it ec2types.InstanceTypeInfo, value func(ec2types.DiskInfo) string) []string {
	if it.InstanceStorageInfo == nil {
		return nil
	}
	var out []string
	for _, d := range it.InstanceStorageInfo.Disks {
		out = append(out, value(d))
	}
	return out
}
