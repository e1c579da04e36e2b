package convert

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestKarpenterPoolRoom(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	tests := []struct {
		name        string
		limits, use corev1.ResourceList
		want        bool
		why         string
	}{
		{name: "no limits", want: true, why: "no limits"},
		{name: "cpu 0 stops it", limits: rl("cpu", "0"), want: false, why: "cpu limit 0 reached (0 in use)"},
		{name: "memory 0 stops it", limits: rl("cpu", "1000", "memory", "0"), want: false, why: "memory limit 0 reached"},
		{name: "pods 0 stops it", limits: rl("pods", "0"), want: false, why: "pods limit 0 reached"},
		{name: "a limit already reached stops it", limits: rl("cpu", "16"), use: rl("cpu", "32"), want: false, why: "cpu limit 16 reached (32 in use)"},
		{name: "a limit exactly reached stops it", limits: rl("cpu", "16"), use: rl("cpu", "16"), want: false},
		{name: "cpu left", limits: rl("cpu", "1000", "memory", "1000Gi"), use: rl("cpu", "20", "memory", "80Gi"), want: true,
			why: "cpu 20 of 1k, memory 80Gi of 1000Gi in use"},
		{name: "a GPU limit of 0 leaves room for other nodes", limits: rl("nvidia.com/gpu", "0"), want: true,
			why: "limits only on nvidia.com/gpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := KarpenterPoolRoom(tt.limits, tt.use)
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("KarpenterPoolRoom = %v, %q; want %v, %q", got, why, tt.want, tt.why)
			}
		})
	}
}
