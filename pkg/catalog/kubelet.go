package catalog

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// Eviction signals that change allocatable. Other signals (inodes, pid,
// imagefs) are thresholds on things pods do not request.
const (
	SignalMemoryAvailable = "memory.available"
	SignalNodeFSAvailable = "nodefs.available"
)

// KubeletSettings are the kubelet settings that change how much of a node
// pods may use. The zero value means the EKS defaults.
type KubeletSettings struct {
	// MaxPods replaces the ENI-limited pod count when set.
	MaxPods *int32
	// PodsPerCore caps pods at PodsPerCore × vCPU when set and positive.
	PodsPerCore *int32
	// SystemReserved is kept back as given; nothing by default.
	SystemReserved corev1.ResourceList
	// KubeReserved replaces the computed kube-reserved value per resource
	// (a key given here wins; keys not given keep the EKS formula).
	KubeReserved corev1.ResourceList
	// EvictionHard replaces the default threshold per signal
	// (memory.available 100Mi, nodefs.available 10%).
	EvictionHard map[string]Threshold
}

// Threshold is an eviction threshold: a quantity, or a percentage of the
// resource's capacity.
type Threshold struct {
	Quantity resource.Quantity
	// Percentage in (0, 100]; when positive it wins over Quantity.
	Percentage float64
}

// ParseThreshold reads "100Mi" or "10%".
func ParseThreshold(s string) (Threshold, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v <= 0 || v > 100 {
			return Threshold{}, fmt.Errorf("parsing eviction threshold %q: want a percentage in (0, 100]", s)
		}
		return Threshold{Percentage: v}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return Threshold{}, fmt.Errorf("parsing eviction threshold %q: %w", s, err)
	}
	if q.Sign() < 0 {
		return Threshold{}, fmt.Errorf("parsing eviction threshold %q: negative", s)
	}
	return Threshold{Quantity: q}, nil
}

// of resolves the threshold against a capacity.
func (t Threshold) of(capacity resource.Quantity) resource.Quantity {
	if t.Percentage > 0 {
		// Round up: a threshold a byte short of the percentage would let the
		// kubelet evict before pods reach what we promised them.
		v := float64(capacity.Value()) * t.Percentage / 100
		return *resource.NewQuantity(ceilInt64(v), resource.BinarySI)
	}
	return t.Quantity.DeepCopy()
}

// KubeletSettingsFrom converts an EC2NodeClass's kubelet block; nil gives
// the defaults. Errors name the offending key.
func KubeletSettingsFrom(k *awsv1.KubeletConfiguration) (KubeletSettings, error) {
	var out KubeletSettings
	if k == nil {
		return out, nil
	}
	if k.MaxPods != nil {
		v := *k.MaxPods
		out.MaxPods = &v
	}
	if k.PodsPerCore != nil {
		v := *k.PodsPerCore
		out.PodsPerCore = &v
	}
	var err error
	if out.SystemReserved, err = parseReserved("systemReserved", k.SystemReserved); err != nil {
		return KubeletSettings{}, err
	}
	if out.KubeReserved, err = parseReserved("kubeReserved", k.KubeReserved); err != nil {
		return KubeletSettings{}, err
	}
	if len(k.EvictionHard) > 0 {
		out.EvictionHard = make(map[string]Threshold, len(k.EvictionHard))
		for _, signal := range sortedKeys(k.EvictionHard) {
			t, err := ParseThreshold(k.EvictionHard[signal])
			if err != nil {
				return KubeletSettings{}, fmt.Errorf("evictionHard[%s]: %w", signal, err)
			}
			out.EvictionHard[signal] = t
		}
	}
	return out, nil
}

func parseReserved(field string, in map[string]string) (corev1.ResourceList, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for _, k := range sortedKeys(in) {
		q, err := resource.ParseQuantity(in[k])
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %w", field, k, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s[%s]: negative quantity %s", field, k, in[k])
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
