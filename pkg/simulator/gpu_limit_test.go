package simulator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// Issue 23: the built-in gpu-limit.yaml. The gpu pool may hold 4 GPUs and
// 6 inference pods ask for one each: never more than 4 GPUs are launched
// (the limit counts every GPU a type brings), 4 pods run and 2 wait with
// the limit named, and the web pods run on the general pool regardless.
func TestGPULimitBinds(t *testing.T) {
	res := runCached(t, "gpu-limit.yaml")
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gpus := func(name string) int {
		it, ok := cat.Get(name)
		if !ok {
			t.Fatalf("the gpu pool launched %s, which the catalog does not hold", name)
		}
		q := it.Capacity[corev1.ResourceName("nvidia.com/gpu")]
		return int(q.Value())
	}
	// GPUs live at the end, and launched in the first plan (the peak).
	live, peak := 0, 0
	for _, l := range res.Launches {
		if l.Pool != "gpu" {
			continue
		}
		if !l.Terminated {
			live += gpus(l.InstanceType)
		}
		if l.LaunchedAt < res.Samples[1].T {
			peak += gpus(l.InstanceType)
		}
	}
	if peak != 4 {
		t.Errorf("the gpu pool launched %d GPUs in its first plan, want the limit's 4", peak)
	}
	if live > 4 {
		t.Errorf("%d GPUs live at the end, over the limit of 4", live)
	}
	// 26 pods wanted, 24 run until the scale-down: 2 inference pods wait.
	mid := res.Samples[len(res.Samples)/4]
	if mid.RunningPods != 24 || mid.PendingPods != 2 {
		t.Errorf("at t=%s %d running, %d pending; want 24 and 2", mid.T, mid.RunningPods, mid.PendingPods)
	}
	limit := false
	for _, n := range res.Notes {
		limit = limit || (strings.Contains(n, "FailedProvisioning") && strings.Contains(n, "limit nvidia.com/gpu: 4 would be exceeded"))
	}
	if !limit {
		t.Errorf("no FailedProvisioning note names the GPU limit:\n%s", strings.Join(res.Notes, "\n"))
	}
	end := res.Samples[len(res.Samples)-1]
	if end.PendingPods != 0 || end.RunningPods != 23 {
		t.Errorf("at the end %d running, %d pending; want all 23 running after the scale-down", end.RunningPods, end.PendingPods)
	}
}
