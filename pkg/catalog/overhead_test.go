package catalog

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestAllocatableMatchesReference checks our overhead math against the
// allocatable published for EKS AL2023 defaults, on every snapshot record
// that has a reference figure and the ENI facts pods depend on.
func TestAllocatableMatchesReference(t *testing.T) {
	specs, err := Specs()
	if err != nil {
		t.Fatal(err)
	}
	const tolerance = 0.01
	checked, noENIData := 0, 0
	worst := map[corev1.ResourceName]float64{}
	for _, spec := range specs {
		ref := spec.ReferenceAllocatable
		if ref == nil {
			continue
		}
		if spec.MaxENIs == 0 || spec.IPv4PerENI == 0 {
			// The reference knew these types' ENI limits; the snapshot does
			// not, so their pod count is not derivable. None is offered in
			// us-east-1 (asserted below), so no catalog type is unchecked.
			noENIData++
			if spec.OfferedInRegion {
				t.Errorf("%s: offered in the region but has no ENI data to check pods against", spec.Name)
			}
			continue
		}
		checked++
		it := NewInstanceType(spec, nil, Options{})
		alloc := it.Allocatable()
		for _, c := range []struct {
			name corev1.ResourceName
			got  int64
			want int64
		}{
			{corev1.ResourceCPU, milli(alloc, corev1.ResourceCPU), ref.CPUMillicores},
			{corev1.ResourceMemory, mib(alloc, corev1.ResourceMemory), ref.MemoryMiB},
			{corev1.ResourcePods, value(alloc, corev1.ResourcePods), ref.Pods},
			{corev1.ResourceEphemeralStorage, mib(alloc, corev1.ResourceEphemeralStorage), ref.EphemeralStorageMiB},
		} {
			dev := math.Abs(float64(c.got-c.want)) / math.Max(float64(c.want), 1)
			worst[c.name] = math.Max(worst[c.name], dev)
			if dev > tolerance {
				t.Errorf("%s %s: got %d, reference %d (%.2f%% off)", spec.Name, c.name, c.got, c.want, dev*100)
			}
		}
	}
	if checked < 1300 {
		t.Errorf("checked only %d types against the reference; the snapshot has ~1355 with ENI data", checked)
	}
	t.Logf("checked %d types (%d with a reference but no ENI data skipped); max deviation cpu %.4f%% memory %.4f%% pods %.4f%% ephemeral-storage %.4f%%",
		checked, noENIData, worst[corev1.ResourceCPU]*100, worst[corev1.ResourceMemory]*100,
		worst[corev1.ResourcePods]*100, worst[corev1.ResourceEphemeralStorage]*100)
}

func milli(l corev1.ResourceList, n corev1.ResourceName) int64 {
	q := l[n]
	return q.MilliValue()
}

func value(l corev1.ResourceList, n corev1.ResourceName) int64 {
	q := l[n]
	return q.Value()
}

func mib(l corev1.ResourceList, n corev1.ResourceName) int64 {
	q := l[n]
	return q.Value() / (1 << 20)
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }
