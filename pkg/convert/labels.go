package convert

import (
	"strings"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Karpenter's API groups and the label prefixes they own.
const (
	karpenterGroup    = "karpenter.sh"
	karpenterAWSGroup = "karpenter.k8s.aws"
)

// labelKeys maps Karpenter label keys to Nodesmith's. Keys under
// karpenter.sh/ and karpenter.k8s.aws/ that are not here have no Nodesmith
// equivalent (see noEquivalent).
var labelKeys = map[string]string{
	karpenterGroup + "/capacity-type": nsv1.LabelCapacityType,
	karpenterGroup + "/nodepool":      nsv1.LabelNodePool,
	karpenterGroup + "/registered":    nsv1.LabelRegistered,
	karpenterGroup + "/initialized":   nsv1.LabelInitialized,

	karpenterAWSGroup + "/instance-category":          awsv1.LabelInstanceCategory,
	karpenterAWSGroup + "/instance-family":            awsv1.LabelInstanceFamily,
	karpenterAWSGroup + "/instance-generation":        awsv1.LabelInstanceGeneration,
	karpenterAWSGroup + "/instance-size":              awsv1.LabelInstanceSize,
	karpenterAWSGroup + "/instance-cpu":               awsv1.LabelInstanceCPU,
	karpenterAWSGroup + "/instance-memory":            awsv1.LabelInstanceMemory,
	karpenterAWSGroup + "/instance-gpu-count":         awsv1.LabelInstanceGPUCount,
	karpenterAWSGroup + "/instance-gpu-name":          awsv1.LabelInstanceGPUName,
	karpenterAWSGroup + "/instance-hypervisor":        awsv1.LabelInstanceHypervisor,
	karpenterAWSGroup + "/instance-local-nvme":        awsv1.LabelInstanceLocalNVMe,
	karpenterAWSGroup + "/instance-network-bandwidth": awsv1.LabelInstanceNetworkBandwidth,
	karpenterAWSGroup + "/ec2nodeclass":               awsv1.LabelEC2NodeClass,
}

// annotationKeys maps Karpenter annotation keys a user may put on a pool's
// nodes to Nodesmith's.
var annotationKeys = map[string]string{
	karpenterGroup + "/do-not-disrupt": nsv1.AnnotationDoNotDisrupt,
}

// mapLabelKey returns the Nodesmith key of a Karpenter label key. ok is
// false for a key under a Karpenter prefix that Nodesmith does not label
// nodes with (e.g. karpenter.k8s.aws/instance-cpu-manufacturer); other keys
// (kubernetes.io/arch, your own) are returned unchanged.
func mapLabelKey(k string) (string, bool) {
	if v, ok := labelKeys[k]; ok {
		return v, true
	}
	if noEquivalent(k) {
		return "", false
	}
	return k, true
}

func noEquivalent(k string) bool {
	return strings.HasPrefix(k, karpenterGroup+"/") || strings.HasPrefix(k, karpenterAWSGroup+"/") ||
		strings.HasPrefix(k, "topology.k8s.aws/")
}

// mapAnnotationKey is mapLabelKey for annotations.
func mapAnnotationKey(k string) (string, bool) {
	if v, ok := annotationKeys[k]; ok {
		return v, true
	}
	if noEquivalent(k) {
		return "", false
	}
	return k, true
}
