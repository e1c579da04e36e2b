package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
)

// Annotations the AWS provider stamps on a NodeClaim at launch; drift
// compares them with the EC2NodeClass.
const (
	// AnnotationEC2NodeClassHash is EC2NodeClass.Hash of the class the
	// instance launched with.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion is the EC2NodeClassHashVersion that computed it.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// AnnotationSubnetID is the subnet the instance launched in.
	AnnotationSubnetID = Group + "/subnet-id"
	// AnnotationSecurityGroupIDs are the instance's security groups, sorted, comma-separated.
	AnnotationSecurityGroupIDs = Group + "/security-group-ids"
)

// EC2NodeClassHashVersion is stamped next to the hash; a claim stamped by
// another version is never called drifted on its hash alone.
const EC2NodeClassHashVersion = "v1"

// ec2NodeClassHashed is what the hash covers: the launch settings a running
// instance would have to be replaced to pick up. The subnet, security group
// and AMI selectors are not in it: drift compares what they resolve to
// (status) with what each instance runs, so a selector rewritten to select
// the same resources rolls nothing.
type ec2NodeClassHashed struct {
	AMIFamily                *string               `json:"amiFamily,omitempty"`
	Role                     *string               `json:"role,omitempty"`
	InstanceProfile          *string               `json:"instanceProfile,omitempty"`
	UserData                 *string               `json:"userData,omitempty"`
	Tags                     map[string]string     `json:"tags,omitempty"`
	BlockDeviceMappings      []BlockDeviceMapping  `json:"blockDeviceMappings,omitempty"`
	MetadataOptions          *MetadataOptions      `json:"metadataOptions,omitempty"`
	AssociatePublicIPAddress *bool                 `json:"associatePublicIPAddress,omitempty"`
	DetailedMonitoring       *bool                 `json:"detailedMonitoring,omitempty"`
	Kubelet                  *KubeletConfiguration `json:"kubelet,omitempty"`
}

// Hash is the hash of the class's launch settings stamped on the claims it
// launches (AnnotationEC2NodeClassHash).
func (in *EC2NodeClass) Hash() string {
	s := in.Spec
	return hashJSON(ec2NodeClassHashed{
		AMIFamily: s.AMIFamily, Role: s.Role, InstanceProfile: s.InstanceProfile, UserData: s.UserData, Tags: s.Tags,
		BlockDeviceMappings: s.BlockDeviceMappings, MetadataOptions: s.MetadataOptions,
		AssociatePublicIPAddress: s.AssociatePublicIPAddress, DetailedMonitoring: s.DetailedMonitoring, Kubelet: s.Kubelet,
	})
}

// hashJSON is a short stable hash of v's JSON form (maps marshal sorted);
// the same construction as nodesmith.sh/v1's, kept here so this package
// imports only Kubernetes API packages.
func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // API types always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// LaunchAnnotations are the drift annotations of an instance launched with
// class nc into subnet with securityGroups; the provider returns them on the
// created NodeClaim.
func LaunchAnnotations(nc *EC2NodeClass, subnet string, securityGroups []string) map[string]string {
	out := map[string]string{
		AnnotationEC2NodeClassHash:        nc.Hash(),
		AnnotationEC2NodeClassHashVersion: EC2NodeClassHashVersion,
	}
	if subnet != "" {
		out[AnnotationSubnetID] = subnet
	}
	if len(securityGroups) > 0 {
		out[AnnotationSecurityGroupIDs] = SecurityGroupIDsValue(securityGroups)
	}
	return out
}

// SecurityGroupIDsValue is the AnnotationSecurityGroupIDs value of ids:
// sorted and comma-separated, so equal sets compare equal.
func SecurityGroupIDsValue(ids []string) string {
	s := append([]string(nil), ids...)
	sort.Strings(s)
	return strings.Join(s, ",")
}
