package aws

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// AMI variants an alias resolves to. EKS publishes AL2023 as a standard,
// an NVIDIA (drivers and container toolkit) and a Neuron image;
// Bottlerocket as a standard and an NVIDIA variant. A GPU type booted from
// the standard image has no drivers, so each variant carries requirements
// that send every type to the image it needs.
const (
	variantStandard = "standard"
	variantNVIDIA   = "nvidia"
	variantNeuron   = "neuron"
)

// aliasImage is one public SSM parameter an alias resolves through and the
// instance types the image it names serves.
type aliasImage struct {
	parameter    string
	arch         string // Kubernetes spelling
	requirements []corev1.NodeSelectorRequirement
}

// aliasVariants are the variants each family publishes per architecture
// (AWS spelling); a parameter that does not exist is skipped at resolve.
var aliasVariants = map[string]map[string][]string{
	"al2023": {
		catalog.ArchX86_64: {variantStandard, variantNVIDIA, variantNeuron},
		catalog.ArchARM64:  {variantStandard, variantNVIDIA},
	},
	"bottlerocket": {
		catalog.ArchX86_64: {variantStandard, variantNVIDIA},
		catalog.ArchARM64:  {variantStandard, variantNVIDIA},
	},
}

// aliasImages lists the parameters of alias family@version, in a fixed
// order: per architecture (x86_64, arm64), standard, nvidia, neuron.
func aliasImages(alias, k8sVersion string) ([]aliasImage, error) {
	family, version, ok := strings.Cut(strings.ToLower(alias), "@")
	if !ok {
		return nil, fmt.Errorf("alias %q is not family@version", alias)
	}
	variants, ok := aliasVariants[family]
	if !ok {
		return nil, fmt.Errorf("alias family %q is not al2023 or bottlerocket", family)
	}
	var out []aliasImage
	for _, arch := range []string{catalog.ArchX86_64, catalog.ArchARM64} {
		for _, v := range variants[arch] {
			var name string
			switch family {
			case "al2023":
				// A pinned version names the release: …/<arch>/<variant>/amazon-eks-node-al2023-<arch>-<variant>-<k8s>-vYYYYMMDD/image_id.
				leaf := "recommended"
				if version != "latest" {
					leaf = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", arch, v, k8sVersion, version)
				}
				name = fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8sVersion, arch, v, leaf)
			case "bottlerocket":
				suffix := ""
				if v != variantStandard {
					suffix = "-" + v
				}
				name = fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8sVersion, suffix, arch, strings.TrimPrefix(version, "v"))
			}
			kube := catalog.KubeArch(arch)
			out = append(out, aliasImage{parameter: name, arch: kube, requirements: variantRequirements(v, kube)})
		}
	}
	return out, nil
}

// variantRequirements are the instance types a variant's image serves:
// NVIDIA GPUs get the NVIDIA image, AWS Neuron accelerators the Neuron
// image, types with neither the standard one. A type with a GPU or an
// accelerator no variant drives (an AMD GPU, say) meets none: it is not
// launched from the alias rather than booted without its drivers.
func variantRequirements(variant, arch string) []corev1.NodeSelectorRequirement {
	req := func(k string, op corev1.NodeSelectorOperator, vs ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: op, Values: vs}
	}
	out := archRequirements(arch)
	switch variant {
	case variantNVIDIA:
		out = append(out, req(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpExists),
			req(awsv1.LabelInstanceGPUManufacturer, corev1.NodeSelectorOpIn, "nvidia"))
	case variantNeuron:
		out = append(out, req(awsv1.LabelInstanceAcceleratorCount, corev1.NodeSelectorOpExists),
			req(awsv1.LabelInstanceAcceleratorManufacturer, corev1.NodeSelectorOpIn, "aws"))
	default:
		out = append(out, req(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpDoesNotExist),
			req(awsv1.LabelInstanceAcceleratorCount, corev1.NodeSelectorOpDoesNotExist))
	}
	return out
}

// archRequirements: an image boots its own architecture.
func archRequirements(arch string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
}
