package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// ImageFor is the image an instance type with these labels launches with:
// the first of a node class's status.amis whose requirements the labels
// meet (an image without requirements serves its architecture). The launch
// (which template an option uses), the instance types offered to the
// solver and drift (is a node's image still the one its type would get)
// all ask this rule, so they cannot disagree.
func ImageFor(amis []awsv1.AMI, labels map[string]string) (awsv1.AMI, bool) {
	return CompileImages(amis).For(labels)
}

// Images is a list of images with their requirements converted once, for
// callers that ask ImageFor of many types.
type Images struct {
	amis []awsv1.AMI
	reqs []Requirements // nil: the image goes by its architecture
}

// CompileImages prepares amis for many For calls.
func CompileImages(amis []awsv1.AMI) Images {
	im := Images{amis: amis, reqs: make([]Requirements, len(amis))}
	for i, a := range amis {
		if len(a.Requirements) > 0 {
			im.reqs[i] = FromNodeSelectorRequirements(a.Requirements)
		}
	}
	return im
}

// For is ImageFor over the compiled images.
func (im Images) For(labels map[string]string) (awsv1.AMI, bool) {
	for i, a := range im.amis {
		if r := im.reqs[i]; r != nil {
			if r.Matches(labels) {
				return a, true
			}
		} else if a.Architecture == "" || labels[corev1.LabelArchStable] == a.Architecture {
			return a, true
		}
	}
	return awsv1.AMI{}, false
}
