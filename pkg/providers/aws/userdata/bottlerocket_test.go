package userdata

import (
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// bottlerocketSettings is the part of Bottlerocket's settings schema we write.
type bottlerocketSettings struct {
	Settings struct {
		Kubernetes struct {
			ClusterName        string              `toml:"cluster-name"`
			APIServer          string              `toml:"api-server"`
			ClusterCertificate string              `toml:"cluster-certificate"`
			MaxPods            *int64              `toml:"max-pods"`
			ClusterDNSIP       []string            `toml:"cluster-dns-ip"`
			SystemReserved     map[string]string   `toml:"system-reserved"`
			KubeReserved       map[string]string   `toml:"kube-reserved"`
			EvictionHard       map[string]string   `toml:"eviction-hard"`
			NodeLabels         map[string]string   `toml:"node-labels"`
			NodeTaints         map[string][]string `toml:"node-taints"`
		} `toml:"kubernetes"`
	} `toml:"settings"`
}

func parseSettings(t *testing.T, s string) bottlerocketSettings {
	t.Helper()
	var out bottlerocketSettings
	md, err := toml.Decode(s, &out)
	if err != nil {
		t.Fatalf("user data is not TOML: %v\n%s", err, s)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Errorf("user data has keys outside the schema: %v\n%s", u, s)
	}
	return out
}

func TestBottlerocketKubeletSettings(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	base := Options{Family: FamilyBottlerocket, ClusterName: "c1", Endpoint: "https://api", CABundle: "Q0E="}
	tests := []struct {
		name    string
		kubelet *awsv1.KubeletConfiguration
		maxPods int64
		check   func(t *testing.T, s bottlerocketSettings)
	}{
		{name: "defaults write no kubelet keys", check: func(t *testing.T, s bottlerocketSettings) {
			k := s.Settings.Kubernetes
			if k.MaxPods != nil || k.ClusterDNSIP != nil || k.SystemReserved != nil || k.KubeReserved != nil || k.EvictionHard != nil {
				t.Errorf("kubelet keys without kubelet settings: %+v", k)
			}
			if k.ClusterName != "c1" || k.APIServer != "https://api" || k.ClusterCertificate != "Q0E=" {
				t.Errorf("cluster = %q %q %q", k.ClusterName, k.APIServer, k.ClusterCertificate)
			}
		}},
		{name: "maxPods alone", kubelet: &awsv1.KubeletConfiguration{MaxPods: i32(42)}, check: func(t *testing.T, s bottlerocketSettings) {
			if p := s.Settings.Kubernetes.MaxPods; p == nil || *p != 42 {
				t.Errorf("max-pods = %v, want 42", p)
			}
		}},
		// podsPerCore has no Bottlerocket key: the caller resolves it into the
		// type's pod limit, which wins over maxPods.
		{name: "resolved pod limit wins", kubelet: &awsv1.KubeletConfiguration{MaxPods: i32(110), PodsPerCore: i32(4)}, maxPods: 8, check: func(t *testing.T, s bottlerocketSettings) {
			if p := s.Settings.Kubernetes.MaxPods; p == nil || *p != 8 {
				t.Errorf("max-pods = %v, want 8", p)
			}
		}},
		{name: "reservations and thresholds", kubelet: &awsv1.KubeletConfiguration{
			SystemReserved: map[string]string{"cpu": "100m", "memory": "200Mi", "ephemeral-storage": "1Gi", "pid": "1000"},
			KubeReserved:   map[string]string{"cpu": "70m", "memory": "1Gi"},
			EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "15%", "pid.available": "10%"},
		}, check: func(t *testing.T, s bottlerocketSettings) {
			k := s.Settings.Kubernetes
			if want := map[string]string{"cpu": "100m", "memory": "200Mi", "ephemeral-storage": "1Gi", "pid": "1000"}; !reflect.DeepEqual(k.SystemReserved, want) {
				t.Errorf("system-reserved = %v, want %v", k.SystemReserved, want)
			}
			if want := map[string]string{"cpu": "70m", "memory": "1Gi"}; !reflect.DeepEqual(k.KubeReserved, want) {
				t.Errorf("kube-reserved = %v, want %v", k.KubeReserved, want)
			}
			if want := map[string]string{"memory.available": "5%", "nodefs.available": "15%", "pid.available": "10%"}; !reflect.DeepEqual(k.EvictionHard, want) {
				t.Errorf("eviction-hard = %v, want %v", k.EvictionHard, want)
			}
		}},
		{name: "cluster DNS", kubelet: &awsv1.KubeletConfiguration{ClusterDNS: []string{"10.0.0.10", "169.254.20.10"}}, check: func(t *testing.T, s bottlerocketSettings) {
			if want := []string{"10.0.0.10", "169.254.20.10"}; !reflect.DeepEqual(s.Settings.Kubernetes.ClusterDNSIP, want) {
				t.Errorf("cluster-dns-ip = %v, want %v", s.Settings.Kubernetes.ClusterDNSIP, want)
			}
		}},
		{name: "labels and taints beside the kubelet tables", kubelet: &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"memory": "1Gi"}}, check: func(t *testing.T, s bottlerocketSettings) {
			k := s.Settings.Kubernetes
			if k.NodeLabels["team"] != "a" || !reflect.DeepEqual(k.NodeTaints["gpu"], []string{"true:NoSchedule"}) || k.KubeReserved["memory"] != "1Gi" {
				t.Errorf("labels %v taints %v kube-reserved %v", k.NodeLabels, k.NodeTaints, k.KubeReserved)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			o.Kubelet, o.MaxPods = tt.kubelet, tt.maxPods
			o.Labels = map[string]string{"team": "a"}
			o.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
			out, err := Render(o)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, parseSettings(t, out))
			// Our own reader agrees with the TOML parser on labels and taints.
			labels, taints, err := Parse(out)
			if err != nil || labels["team"] != "a" || len(taints) != 1 {
				t.Errorf("Parse = %v %v %v", labels, taints, err)
			}
		})
	}
}
