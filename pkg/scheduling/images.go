package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// ImageFor is the image an instance type with these labels launches with:
// the first of a node class's status.amis whose requirements the labels
// meet (an image without requirements serves its architecture). The launch
// (which template an option uses) and drift (is a node's image still the
// one its type would get) both ask this function, so they cannot disagree.
func ImageFor(amis []awsv1.AMI, labels map[string]string) (awsv1.AMI, bool) {
	for _, a := range amis {
		if ImageFits(a, labels) {
			return a, true
		}
	}
	return awsv1.AMI{}, false
}

// ImageFits reports whether an instance type with these labels may launch
// with image a.
func ImageFits(a awsv1.AMI, labels map[string]string) bool {
	if len(a.Requirements) == 0 {
		return a.Architecture == "" || labels[corev1.LabelArchStable] == a.Architecture
	}
	return FromNodeSelectorRequirements(a.Requirements).Matches(labels)
}
