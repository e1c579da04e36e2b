package catalog

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

func specNamed(t *testing.T, name string) Spec {
	t.Helper()
	specs, err := Specs()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no spec %s in the snapshot", name)
	return Spec{}
}

// m5.large: 2 vCPU, 8192 MiB, 3 ENIs × 10 IPv4 → 29 pods. Capacity memory is
// 8192 − ceil(8192 × 0.075) = 7577 MiB; kube-reserved cpu 70m.
func TestKubeletSettingsChangeAllocatable(t *testing.T) {
	const mi = int64(1 << 20)
	const gi = int64(1 << 30)
	tests := []struct {
		name string
		opts Options
		// want: cpu in millicores, memory and ephemeral storage in bytes, pods.
		cpu, memory, ephemeral, pods int64
	}{
		{name: "defaults", opts: Options{},
			cpu: 1930, memory: 6903 * mi, ephemeral: 17 * gi, pods: 29},
		{name: "maxPods raises pods and the per-pod memory reservation",
			opts: Options{Kubelet: KubeletSettings{MaxPods: ptr.To[int32](110)}},
			cpu:  1930, memory: (7577 - (11*110 + 255) - 100) * mi, ephemeral: 17 * gi, pods: 110},
		{name: "podsPerCore caps the ENI limit",
			opts: Options{Kubelet: KubeletSettings{PodsPerCore: ptr.To[int32](10)}},
			cpu:  1930, memory: (7577 - (11*20 + 255) - 100) * mi, ephemeral: 17 * gi, pods: 20},
		{name: "podsPerCore caps maxPods too",
			opts: Options{Kubelet: KubeletSettings{MaxPods: ptr.To[int32](110), PodsPerCore: ptr.To[int32](10)}},
			cpu:  1930, memory: (7577 - (11*20 + 255) - 100) * mi, ephemeral: 17 * gi, pods: 20},
		{name: "podsPerCore 0 is no cap",
			opts: Options{Kubelet: KubeletSettings{PodsPerCore: ptr.To[int32](0)}},
			cpu:  1930, memory: 6903 * mi, ephemeral: 17 * gi, pods: 29},
		{name: "evictionHard memory percentage is of capacity memory",
			opts: Options{Kubelet: KubeletSettings{EvictionHard: map[string]Threshold{SignalMemoryAvailable: {Percentage: 5}}}},
			// ceil(7577 MiB × 5%) = 397253018 bytes.
			cpu: 1930, memory: (7577-574)*mi - 397253018, ephemeral: 17 * gi, pods: 29},
		{name: "evictionHard memory quantity",
			opts: Options{Kubelet: KubeletSettings{EvictionHard: map[string]Threshold{SignalMemoryAvailable: {Quantity: mustQ("500Mi")}}}},
			cpu:  1930, memory: (7577 - 574 - 500) * mi, ephemeral: 17 * gi, pods: 29},
		{name: "evictionHard nodefs percentage is of the root volume",
			opts: Options{Kubelet: KubeletSettings{EvictionHard: map[string]Threshold{SignalNodeFSAvailable: {Percentage: 15}}}},
			cpu:  1930, memory: 6903 * mi, ephemeral: 20*gi - 1*gi - 3*gi, pods: 29},
		{name: "evictionHard signals that pods do not request change nothing",
			opts: Options{Kubelet: KubeletSettings{EvictionHard: map[string]Threshold{"pid.available": {Percentage: 50}}}},
			cpu:  1930, memory: 6903 * mi, ephemeral: 17 * gi, pods: 29},
		{name: "kubeReserved keys replace the formula, others keep it",
			opts: Options{Kubelet: KubeletSettings{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: mustQ("200m"), corev1.ResourceMemory: mustQ("1Gi")}}},
			cpu:  1800, memory: (7577 - 1024 - 100) * mi, ephemeral: 17 * gi, pods: 29},
		{name: "systemReserved adds to kube-reserved",
			opts: Options{Kubelet: KubeletSettings{SystemReserved: corev1.ResourceList{corev1.ResourceCPU: mustQ("100m"), corev1.ResourceMemory: mustQ("200Mi")}}},
			cpu:  1830, memory: (6903 - 200) * mi, ephemeral: 17 * gi, pods: 29},
		{name: "no VM memory overhead",
			opts: Options{VMMemoryOverheadPercent: -1},
			cpu:  1930, memory: (8192 - 574 - 100) * mi, ephemeral: 17 * gi, pods: 29},
		{name: "reserved ENIs take pod addresses away",
			opts: Options{ReservedENIs: 1},
			cpu:  1930, memory: (7577 - (11*20 + 255) - 100) * mi, ephemeral: 17 * gi, pods: 20},
		{name: "a bigger root volume",
			opts: Options{EphemeralStorage: mustQ("100Gi")},
			cpu:  1930, memory: 6903 * mi, ephemeral: 100*gi - 1*gi - 10*gi, pods: 29},
		{name: "reservations beyond capacity floor at zero",
			opts: Options{Kubelet: KubeletSettings{SystemReserved: corev1.ResourceList{corev1.ResourceCPU: mustQ("3")}}},
			cpu:  0, memory: 6903 * mi, ephemeral: 17 * gi, pods: 29},
	}
	spec := specNamed(t, "m5.large")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alloc := NewInstanceType(spec, nil, tt.opts).Allocatable()
			for _, c := range []struct {
				name      corev1.ResourceName
				got, want int64
			}{
				{corev1.ResourceCPU, milli(alloc, corev1.ResourceCPU), tt.cpu},
				{corev1.ResourceMemory, value(alloc, corev1.ResourceMemory), tt.memory},
				{corev1.ResourceEphemeralStorage, value(alloc, corev1.ResourceEphemeralStorage), tt.ephemeral},
				{corev1.ResourcePods, value(alloc, corev1.ResourcePods), tt.pods},
			} {
				if c.got != c.want {
					t.Errorf("%s: got %d, want %d", c.name, c.got, c.want)
				}
			}
		})
	}
}

func TestMaxPodsCap(t *testing.T) {
	spec := specNamed(t, "m5.24xlarge") // 15 ENIs × 50 IPv4 → 737 pods
	tests := []struct {
		name string
		opts Options
		want int64
	}{
		{"uncapped by default", Options{}, 737},
		{"capped", Options{MaxPodsCap: 110}, 110},
		{"maxPods wins over the cap", Options{MaxPodsCap: 110, Kubelet: KubeletSettings{MaxPods: ptr.To[int32](250)}}, 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := value(NewInstanceType(spec, nil, tt.opts).Capacity, corev1.ResourcePods); got != tt.want {
				t.Errorf("pods = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestKubeletSettingsFrom(t *testing.T) {
	tests := []struct {
		name    string
		in      *awsv1.KubeletConfiguration
		want    KubeletSettings
		wantErr string
	}{
		{name: "nil is the defaults", in: nil, want: KubeletSettings{}},
		{
			name: "every field",
			in: &awsv1.KubeletConfiguration{
				MaxPods:        ptr.To[int32](50),
				PodsPerCore:    ptr.To[int32](4),
				SystemReserved: map[string]string{"cpu": "100m"},
				KubeReserved:   map[string]string{"memory": "1Gi"},
				EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "2Gi"},
			},
			want: KubeletSettings{
				MaxPods:        ptr.To[int32](50),
				PodsPerCore:    ptr.To[int32](4),
				SystemReserved: corev1.ResourceList{corev1.ResourceCPU: mustQ("100m")},
				KubeReserved:   corev1.ResourceList{corev1.ResourceMemory: mustQ("1Gi")},
				EvictionHard: map[string]Threshold{
					SignalMemoryAvailable: {Percentage: 5},
					SignalNodeFSAvailable: {Quantity: mustQ("2Gi")},
				},
			},
		},
		{name: "bad quantity", in: &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "lots"}}, wantErr: "kubeReserved[cpu]"},
		{name: "negative reservation", in: &awsv1.KubeletConfiguration{SystemReserved: map[string]string{"memory": "-1Gi"}}, wantErr: "systemReserved[memory]"},
		{name: "percentage over 100", in: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "150%"}}, wantErr: "evictionHard[memory.available]"},
		{name: "not a percentage", in: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "ten%"}}, wantErr: "evictionHard[nodefs.available]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := KubeletSettingsFrom(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalSettings(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The converter's output drives the same math as hand-built settings.
func TestKubeletSettingsFromDrivesAllocatable(t *testing.T) {
	ks, err := KubeletSettingsFrom(&awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110), EvictionHard: map[string]string{"memory.available": "500Mi"}})
	if err != nil {
		t.Fatal(err)
	}
	alloc := NewInstanceType(specNamed(t, "m5.large"), nil, Options{Kubelet: ks}).Allocatable()
	if got, want := mib(alloc, corev1.ResourceMemory), int64(7577-(11*110+255)-500); got != want {
		t.Errorf("memory = %d MiB, want %d", got, want)
	}
}

func equalSettings(a, b KubeletSettings) bool {
	eqPtr := func(x, y *int32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqList := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || v.Cmp(w) != 0 {
				return false
			}
		}
		return true
	}
	if !eqPtr(a.MaxPods, b.MaxPods) || !eqPtr(a.PodsPerCore, b.PodsPerCore) ||
		!eqList(a.SystemReserved, b.SystemReserved) || !eqList(a.KubeReserved, b.KubeReserved) ||
		len(a.EvictionHard) != len(b.EvictionHard) {
		return false
	}
	for k, v := range a.EvictionHard {
		w, ok := b.EvictionHard[k]
		if !ok || v.Percentage != w.Percentage || v.Quantity.Cmp(w.Quantity) != 0 {
			return false
		}
	}
	return true
}

func TestKubeReservedCPU(t *testing.T) {
	tests := []struct {
		vcpus int
		want  int64
	}{
		{1, 60}, {2, 70}, {3, 75}, {4, 80}, {5, 82}, {8, 90}, {48, 190}, {96, 310}, {192, 550},
	}
	for _, tt := range tests {
		if got := kubeReservedCPUMillis(tt.vcpus); got != tt.want {
			t.Errorf("kubeReservedCPUMillis(%d) = %d, want %d", tt.vcpus, got, tt.want)
		}
	}
}
