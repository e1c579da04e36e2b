package catalog

import (
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The EKS figures the overhead math uses. They match the published
// allocatable of every snapshot type with ENI data (see overhead_test.go).
const (
	// DefaultVMMemoryOverheadPercent is the share of memory the hypervisor
	// and firmware keep; the kubelet sees the rest.
	DefaultVMMemoryOverheadPercent = 0.075
	// arm64MemoryHoleMiB: arm64 guests report 64 MiB less than the type's size.
	arm64MemoryHoleMiB = 64
	// DefaultEphemeralStorage is the root volume an unconfigured node gets.
	DefaultEphemeralStorage = "20Gi"
	// defaultMaxPods is used when the ENI limits are unknown.
	defaultMaxPods = 110

	kubeReservedMemoryPerPodMiB = 11
	kubeReservedMemoryBaseMiB   = 255
	kubeReservedEphemeralGi     = 1
	evictionMemoryMi            = 100
	evictionNodeFSPercent       = 10
)

var (
	quantityDefaultEphemeral = resource.MustParse(DefaultEphemeralStorage)
)

// maxPods is the pod limit: the ENI limit (or MaxPods), capped by
// podsPerCore and by the optional global cap.
func maxPods(spec *Spec, opts *Options) int64 {
	pods := int64(defaultMaxPods)
	if enis := spec.ENIsOnDefaultCard() - opts.ReservedENIs; spec.ENIsOnDefaultCard() > 0 && spec.IPv4PerENI > 0 {
		// Each ENI's primary address is the node's own; two host-network
		// pods (aws-node, kube-proxy) need no address.
		pods = int64(max(enis, 0))*int64(spec.IPv4PerENI-1) + 2
	}
	if opts.MaxPodsCap > 0 && pods > int64(opts.MaxPodsCap) {
		pods = int64(opts.MaxPodsCap)
	}
	if k := opts.Kubelet.MaxPods; k != nil {
		pods = int64(*k)
	}
	if k := opts.Kubelet.PodsPerCore; k != nil && *k > 0 {
		pods = min(pods, int64(*k)*int64(spec.VCPUs))
	}
	return pods
}

// capacity is what the kubelet reports: vCPUs, memory after the VM's share,
// the pod limit, the root volume and extended resources.
func capacity(spec *Spec, opts *Options, pods int64) corev1.ResourceList {
	mem := spec.MemoryMiB
	if spec.Architecture == ArchARM64 {
		mem -= arm64MemoryHoleMiB
	}
	mem -= ceilInt64(float64(mem) * opts.VMMemoryOverheadPercent)
	ext := extendedResources(spec)
	out := make(corev1.ResourceList, 4+len(ext))
	out[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(spec.VCPUs)*1000, resource.DecimalSI)
	out[corev1.ResourceMemory] = *resource.NewQuantity(max(mem, 0)*mebi, resource.BinarySI)
	out[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)
	out[corev1.ResourceEphemeralStorage] = opts.EphemeralStorage.DeepCopy()
	for name, n := range ext {
		out[name] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return out
}

// Extended resource names the device plugins register.
const (
	ResourceNVIDIAGPU   corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU      corev1.ResourceName = "amd.com/gpu"
	ResourceAWSNeuron   corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceHabanaGaudi corev1.ResourceName = "habana.ai/gaudi"
)

func extendedResources(spec *Spec) map[corev1.ResourceName]int64 {
	if spec.GPUCount == 0 && spec.AcceleratorCount == 0 {
		return nil
	}
	out := map[corev1.ResourceName]int64{}
	if spec.GPUCount > 0 {
		switch spec.GPUManufacturer {
		case "nvidia":
			out[ResourceNVIDIAGPU] = int64(spec.GPUCount)
		case "amd":
			out[ResourceAMDGPU] = int64(spec.GPUCount)
		}
	}
	if spec.AcceleratorCount > 0 {
		switch {
		case strings.HasPrefix(spec.AcceleratorName, "inferentia"), strings.HasPrefix(spec.AcceleratorName, "trainium"):
			out[ResourceAWSNeuron] = int64(spec.AcceleratorCount)
		case strings.HasPrefix(spec.AcceleratorName, "gaudi"):
			out[ResourceHabanaGaudi] = int64(spec.AcceleratorCount)
		}
	}
	return out
}

// overhead is kube-reserved (EKS formulas, user keys win), system-reserved
// (the user's only) and the hard eviction thresholds. The per-pod memory
// reservation uses the effective pod limit (after maxPods and podsPerCore),
// so raising maxPods costs memory, as it does on the node.
func overhead(spec *Spec, opts *Options, capacity corev1.ResourceList, pods int64) Overhead {
	kube := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedCPUMillis(spec.VCPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((kubeReservedMemoryPerPodMiB*pods+kubeReservedMemoryBaseMiB)*mebi, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(kubeReservedEphemeralGi*gibi, resource.BinarySI),
	}
	for k, v := range opts.Kubelet.KubeReserved {
		kube[k] = v.DeepCopy()
	}
	system := corev1.ResourceList{}
	for k, v := range opts.Kubelet.SystemReserved {
		system[k] = v.DeepCopy()
	}
	eviction := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(evictionMemoryMi*mebi, resource.BinarySI),
		corev1.ResourceEphemeralStorage: Threshold{Percentage: evictionNodeFSPercent}.of(capacity[corev1.ResourceEphemeralStorage]),
	}
	if t, ok := opts.Kubelet.EvictionHard[SignalMemoryAvailable]; ok {
		eviction[corev1.ResourceMemory] = t.of(capacity[corev1.ResourceMemory])
	}
	if t, ok := opts.Kubelet.EvictionHard[SignalNodeFSAvailable]; ok {
		eviction[corev1.ResourceEphemeralStorage] = t.of(capacity[corev1.ResourceEphemeralStorage])
	}
	return Overhead{KubeReserved: kube, SystemReserved: system, EvictionThreshold: eviction}
}

// kubeReservedCPUMillis: 6% of the first core, 1% of the second, 0.5% of
// the third and fourth, 0.25% of every core after that (fractions of a
// millicore are dropped).
func kubeReservedCPUMillis(vcpus int) int64 {
	var tenthMillis int64 // in 0.1 m, so 0.25% of a core (2.5 m) stays exact
	for core := 1; core <= vcpus; core++ {
		switch {
		case core == 1:
			tenthMillis += 600
		case core == 2:
			tenthMillis += 100
		case core <= 4:
			tenthMillis += 50
		default:
			tenthMillis += 25
		}
	}
	return tenthMillis / 10
}

// Total sums the three parts of the overhead.
func (o Overhead) Total() corev1.ResourceList {
	out := make(corev1.ResourceList, len(o.KubeReserved)+len(o.SystemReserved))
	for _, l := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
		for k, v := range l {
			sum := out[k]
			sum.Add(v)
			out[k] = sum
		}
	}
	return out
}

// subtractFloor returns capacity − overhead per resource, never below zero:
// a node whose reservations exceed a resource simply has none for pods.
func subtractFloor(capacity, overhead corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(capacity))
	for k, v := range capacity {
		q := v.DeepCopy()
		if o, ok := overhead[k]; ok {
			q.Sub(o)
		}
		if q.Sign() < 0 {
			q = *resource.NewQuantity(0, q.Format)
		}
		out[k] = q
	}
	return out
}

const (
	mebi = 1 << 20
	gibi = 1 << 30
)

func ceilInt64(v float64) int64 { return int64(math.Ceil(v - 1e-9)) }
