package userdata

import "testing"

func TestKubeletMaySet(t *testing.T) {
	for key, want := range map[string]bool{
		"team":                                true,
		"example.com/team":                    true,
		"nodesmith.sh/nodepool":               true,
		"kubernetes.io/arch":                  true,
		"topology.kubernetes.io/zone":         true,
		"node.kubernetes.io/instance-type":    true,
		"node.kubernetes.io/role":             true,
		"gpu.node.kubernetes.io/model":        true,
		"kubelet.kubernetes.io/x":             true,
		"node-restriction.kubernetes.io/team": false,
		"kops.k8s.io/instancegroup":           false,
		"example.kubernetes.io/team":          false,
		"k8s.io/team":                         false,
		"notkubernetes.io/team":               true,
	} {
		if got := KubeletMaySet(key); got != want {
			t.Errorf("KubeletMaySet(%q) = %v, want %v", key, got, want)
		}
	}
}
