package disruption

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// DriftReason names what a drifted node no longer matches.
type DriftReason string

const (
	// DriftNodePool: the pool's template (labels, annotations, taints,
	// startup taints, node class reference) changed since the claim was made.
	DriftNodePool DriftReason = "NodePoolDrifted"
	// DriftRequirements: the node's labels no longer satisfy the pool's requirements.
	DriftRequirements DriftReason = "RequirementsDrifted"
	// DriftNodeClass: the EC2NodeClass's launch settings changed.
	DriftNodeClass DriftReason = "NodeClassDrifted"
	// DriftAMI: the instance runs an image the class no longer resolves to.
	DriftAMI DriftReason = "AMIDrifted"
	// DriftSubnet: the instance's subnet is no longer one of the class's.
	DriftSubnet DriftReason = "SubnetDrifted"
	// DriftSecurityGroup: the class resolves to other security groups.
	DriftSecurityGroup DriftReason = "SecurityGroupDrifted"
)

// Drifted says whether claim no longer matches pool or its node class nc
// (nil when unknown), and how. A value the claim was never stamped with (a
// claim older than the stamp, or stamped by another hash version) is not
// drift: rolling a fleet needs evidence.
func Drifted(claim *nsv1.NodeClaim, pool *nsv1.NodePool, nc *awsv1.EC2NodeClass) (DriftReason, string, bool) {
	a := claim.Annotations
	if h := a[nsv1.AnnotationNodePoolHash]; h != "" && a[nsv1.AnnotationNodePoolHashVersion] == nsv1.NodePoolHashVersion && h != pool.Hash() {
		return DriftNodePool, fmt.Sprintf("nodepool %s's template changed since the node was made", pool.Name), true
	}
	reqs := scheduling.FromAPI(pool.Spec.Template.Spec.Requirements)
	for _, k := range reqs.Keys() {
		v, ok := claim.Labels[k]
		if ok && !reqs[k].Has(v) {
			return DriftRequirements, fmt.Sprintf("label %s=%s no longer satisfies nodepool %s's requirement %s", k, v, pool.Name, reqs[k]), true
		}
	}
	if nc == nil {
		return "", "", false
	}
	if h := a[awsv1.AnnotationEC2NodeClassHash]; h != "" && a[awsv1.AnnotationEC2NodeClassHashVersion] == awsv1.EC2NodeClassHashVersion && h != nc.Hash() {
		return DriftNodeClass, fmt.Sprintf("ec2nodeclass %s's launch settings changed since the node launched", nc.Name), true
	}
	if img := claim.Status.ImageID; img != "" && len(nc.Status.AMIs) > 0 {
		// The image its type launches with now (NVIDIA for GPU types, …),
		// by the rule the launch itself follows.
		want, ok := scheduling.ImageFor(nc.Status.AMIs, claim.Labels)
		switch {
		case !ok && !hasAMI(nc.Status.AMIs, img):
			return DriftAMI, fmt.Sprintf("image %s is no longer among ec2nodeclass %s's AMIs (%s)", img, nc.Name, amiIDs(nc.Status.AMIs)), true
		case ok && want.ID != img:
			return DriftAMI, fmt.Sprintf("image %s is not the one ec2nodeclass %s gives instance type %s now (%s)", img, nc.Name, claim.Labels[corev1.LabelInstanceTypeStable], want.ID), true
		}
	}
	if sub := a[awsv1.AnnotationSubnetID]; sub != "" && len(nc.Status.Subnets) > 0 && !hasSubnet(nc.Status.Subnets, sub) {
		return DriftSubnet, fmt.Sprintf("subnet %s is no longer among ec2nodeclass %s's subnets", sub, nc.Name), true
	}
	if sgs := a[awsv1.AnnotationSecurityGroupIDs]; sgs != "" && len(nc.Status.SecurityGroups) > 0 {
		var want []string
		for _, g := range nc.Status.SecurityGroups {
			want = append(want, g.ID)
		}
		if w := awsv1.SecurityGroupIDsValue(want); w != sgs {
			return DriftSecurityGroup, fmt.Sprintf("security groups %s differ from ec2nodeclass %s's %s", sgs, nc.Name, w), true
		}
	}
	return "", "", false
}

func hasAMI(amis []awsv1.AMI, id string) bool {
	for _, a := range amis {
		if a.ID == id {
			return true
		}
	}
	return false
}

func amiIDs(amis []awsv1.AMI) string {
	ids := make([]string, 0, len(amis))
	for _, a := range amis {
		ids = append(ids, a.ID)
	}
	return strings.Join(ids, ", ")
}

func hasSubnet(subnets []awsv1.Subnet, id string) bool {
	for _, s := range subnets {
		if s.ID == id {
			return true
		}
	}
	return false
}
