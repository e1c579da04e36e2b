package userdata

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

func TestRenderParseRoundTrip(t *testing.T) {
	maxPods := int32(42)
	labels := map[string]string{"nodesmith.sh/nodepool": "default", "team": "a", "nodesmith.sh/capacity-type": "spot"}
	taints := []corev1.Taint{
		{Key: "nodesmith.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
		{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule},
	}
	tests := []struct {
		name     string
		opts     Options
		contains []string
	}{
		{
			name: "al2023",
			opts: Options{Family: FamilyAL2023, ClusterName: "c1", Endpoint: "https://api", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", Labels: labels, Taints: taints,
				Kubelet: &awsv1.KubeletConfiguration{MaxPods: &maxPods}},
			contains: []string{"apiVersion: node.eks.aws/v1alpha1", "kind: NodeConfig", "name: c1", "apiServerEndpoint: https://api",
				"--node-labels=nodesmith.sh/capacity-type=spot,nodesmith.sh/nodepool=default,team=a",
				"--register-with-taints=gpu=true:NoSchedule,nodesmith.sh/unregistered:NoExecute", "maxPods: 42", "Content-Type: application/node.eks.aws", "cidr: 10.100.0.0/16", "certificateAuthority: Q0E="},
		},
		{
			name:     "al2023 with custom shell script",
			opts:     Options{Family: FamilyAL2023, ClusterName: "c1", Endpoint: "https://api", Labels: labels, Taints: taints, Custom: "#!/bin/bash\necho hi"},
			contains: []string{"text/x-shellscript", "echo hi", "kind: NodeConfig"},
		},
		{
			name: "al2023 with custom MIME document",
			opts: Options{Family: FamilyAL2023, ClusterName: "c1", Endpoint: "https://api", Labels: labels, Taints: taints,
				Custom: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"XX\"\n\n--XX\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags:\n    - --node-labels=extra=1\n--XX--\n"},
			contains: []string{"--node-labels=extra=1", "--node-labels=nodesmith.sh/capacity-type=spot"},
		},
		{
			name:     "bottlerocket",
			opts:     Options{Family: FamilyBottlerocket, ClusterName: "c1", Endpoint: "https://api", CABundle: "Q0E=", Labels: labels, Taints: taints},
			contains: []string{"[settings.kubernetes]", `cluster-name = "c1"`, `"team" = "a"`, `"gpu" = ["true:NoSchedule"]`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Render(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.contains {
				if !strings.Contains(out, c) {
					t.Errorf("user data lacks %q:\n%s", c, out)
				}
			}
			for _, in := range []string{out, base64.StdEncoding.EncodeToString([]byte(out))} {
				gotLabels, gotTaints, err := Parse(in)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range labels {
					if gotLabels[k] != v {
						t.Errorf("label %s = %q, want %q", k, gotLabels[k], v)
					}
				}
				if !reflect.DeepEqual(sortedTaints(gotTaints), sortedTaints(taints)) {
					t.Errorf("taints = %v, want %v", gotTaints, taints)
				}
			}
			again, _ := Render(tt.opts)
			if again != out {
				t.Error("render is not deterministic")
			}
		})
	}
}

func TestCustomMIMELabelsMerged(t *testing.T) {
	out, err := Render(Options{Family: FamilyAL2023, ClusterName: "c", Endpoint: "e", Labels: map[string]string{"a": "1"},
		Custom: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"XX\"\n\n--XX\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags:\n    - --node-labels=extra=1\n--XX--\n"})
	if err != nil {
		t.Fatal(err)
	}
	labels, _, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if labels["extra"] != "1" || labels["a"] != "1" {
		t.Errorf("labels = %v, want extra=1 and a=1", labels)
	}
}

func TestCustomFamilyIsVerbatim(t *testing.T) {
	out, err := Render(Options{Family: FamilyCustom, Custom: "#!/bin/sh\nexit 0", Labels: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if out != "#!/bin/sh\nexit 0" {
		t.Errorf("custom user data changed: %q", out)
	}
	labels, taints, err := Parse(out)
	if err != nil || len(labels) != 0 || len(taints) != 0 {
		t.Errorf("Parse(custom) = %v %v %v, want nothing", labels, taints, err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in string }{
		{"bad taint effect", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags:\n    - --register-with-taints=a:Sometimes\n"},
		{"bad label", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags:\n    - --node-labels=novalue\n"},
		{"bad toml", "[settings.kubernetes]\n[settings.kubernetes.node-labels]\n\"a\" \"b\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Parse(tt.in); err == nil {
				t.Error("want an error")
			}
		})
	}
}

func TestUnknownFamily(t *testing.T) {
	if _, err := Render(Options{Family: "Windows"}); err == nil {
		t.Error("want an error for an unknown family")
	}
}
