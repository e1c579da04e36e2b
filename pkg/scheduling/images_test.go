package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

func TestImageFor(t *testing.T) {
	req := func(k string, op corev1.NodeSelectorOperator, vs ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: op, Values: vs}
	}
	arch := func(a string) corev1.NodeSelectorRequirement {
		return req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, a)
	}
	variants := []awsv1.AMI{
		{ID: "ami-std", Architecture: "amd64", Requirements: []corev1.NodeSelectorRequirement{arch("amd64"),
			req(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpDoesNotExist), req(awsv1.LabelInstanceAcceleratorCount, corev1.NodeSelectorOpDoesNotExist)}},
		{ID: "ami-nvidia", Architecture: "amd64", Requirements: []corev1.NodeSelectorRequirement{arch("amd64"),
			req(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpExists), req(awsv1.LabelInstanceGPUManufacturer, corev1.NodeSelectorOpIn, "nvidia")}},
		{ID: "ami-neuron", Architecture: "amd64", Requirements: []corev1.NodeSelectorRequirement{arch("amd64"),
			req(awsv1.LabelInstanceAcceleratorCount, corev1.NodeSelectorOpExists), req(awsv1.LabelInstanceAcceleratorManufacturer, corev1.NodeSelectorOpIn, "aws")}},
	}
	legacy := []awsv1.AMI{{ID: "ami-x86", Architecture: "amd64"}, {ID: "ami-arm", Architecture: "arm64"}}
	tests := []struct {
		name   string
		amis   []awsv1.AMI
		labels map[string]string
		want   string // "" means none fits
	}{
		{"plain type gets the standard image", variants, map[string]string{corev1.LabelArchStable: "amd64"}, "ami-std"},
		{"nvidia gpu type gets the nvidia image", variants, map[string]string{corev1.LabelArchStable: "amd64", awsv1.LabelInstanceGPUCount: "1", awsv1.LabelInstanceGPUManufacturer: "nvidia"}, "ami-nvidia"},
		{"neuron type gets the neuron image", variants, map[string]string{corev1.LabelArchStable: "amd64", awsv1.LabelInstanceAcceleratorCount: "1", awsv1.LabelInstanceAcceleratorManufacturer: "aws"}, "ami-neuron"},
		{"amd gpu type fits no variant", variants, map[string]string{corev1.LabelArchStable: "amd64", awsv1.LabelInstanceGPUCount: "1", awsv1.LabelInstanceGPUManufacturer: "amd"}, ""},
		{"other arch fits no variant", variants, map[string]string{corev1.LabelArchStable: "arm64"}, ""},
		{"images without requirements go by architecture", legacy, map[string]string{corev1.LabelArchStable: "arm64", awsv1.LabelInstanceGPUCount: "1"}, "ami-arm"},
		{"no images", nil, map[string]string{corev1.LabelArchStable: "amd64"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ImageFor(tt.amis, tt.labels)
			if ok != (tt.want != "") || got.ID != tt.want {
				t.Errorf("ImageFor = %q, %v; want %q", got.ID, ok, tt.want)
			}
		})
	}
}
