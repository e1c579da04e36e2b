package convert

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// AMI families as Nodesmith spells them in amiFamily.
const (
	familyAL2023       = "AL2023"
	familyBottlerocket = "Bottlerocket"
	familyCustom       = "Custom"
)

// nodeClass converts a karpenter.k8s.aws/v1beta1 or v1 EC2NodeClass.
func (c *converter) nodeClass(doc map[string]any) {
	root := c.fields(doc, "")
	root.ignore("apiVersion", "kind", "status")
	nc := &awsv1.EC2NodeClass{TypeMeta: metav1.TypeMeta{APIVersion: awsv1.GroupVersion.String(), Kind: "EC2NodeClass"}}
	nc.Name, nc.Labels, nc.Annotations = c.metadata(root.obj("metadata"))
	spec := root.obj("spec")
	if spec == nil {
		c.errorf("spec is missing")
		root.done()
		return
	}
	s := &nc.Spec
	for _, t := range spec.list("subnetSelectorTerms") {
		var term awsv1.SubnetSelectorTerm
		t.decode("tags", &term.Tags)
		term.ID = t.str("id")
		t.done()
		s.SubnetSelectorTerms = append(s.SubnetSelectorTerms, term)
	}
	for _, t := range spec.list("securityGroupSelectorTerms") {
		var term awsv1.SecurityGroupSelectorTerm
		t.decode("tags", &term.Tags)
		term.ID = t.str("id")
		term.Name = t.str("name")
		t.done()
		s.SecurityGroupSelectorTerms = append(s.SecurityGroupSelectorTerms, term)
	}
	c.amis(s, spec)
	s.UserData = spec.strPtr("userData")
	if role := spec.str("role"); role != "" {
		s.Role = &role
	}
	s.InstanceProfile = spec.strPtr("instanceProfile")
	c.nodeRole(s)
	spec.decode("tags", &s.Tags)
	for _, bd := range spec.list("blockDeviceMappings") {
		s.BlockDeviceMappings = append(s.BlockDeviceMappings, c.blockDevice(bd))
	}
	spec.decode("detailedMonitoring", &s.DetailedMonitoring)
	spec.decode("associatePublicIPAddress", &s.AssociatePublicIPAddress)
	c.metadataOptions(s, spec.obj("metadataOptions"), root.m["apiVersion"] == karpenterAWSGroup+"/v1beta1")
	if k := spec.obj("kubelet"); k != nil {
		s.Kubelet = c.kubeletConfig(k)
	}
	spec.done()
	root.done()
	if _, dup := c.classes[nc.Name]; dup {
		c.errorf("EC2NodeClass %s appears twice", nc.Name)
	}
	c.classes[nc.Name] = nc
	c.out = append(c.out, nc)
}

// amis converts amiFamily and amiSelectorTerms. Nodesmith writes user data
// for AL2023 and Bottlerocket; other families keep their explicitly
// selected images as Custom, and their default images (which Nodesmith
// cannot pick) become AL2023 for AL2 and an error for the rest.
func (c *converter) amis(s *awsv1.EC2NodeClassSpec, spec *fields) {
	family := spec.str("amiFamily")
	var terms []awsv1.AMISelectorTerm
	alias := ""
	for _, t := range spec.list("amiSelectorTerms") {
		var term awsv1.AMISelectorTerm
		term.Alias = t.str("alias")
		t.decode("tags", &term.Tags)
		term.ID = t.str("id")
		term.Name = t.str("name")
		term.Owner = t.str("owner")
		t.done()
		if term.Alias != "" {
			alias = term.Alias
		}
		terms = append(terms, term)
	}
	path := spec.at("amiSelectorTerms")
	if alias != "" {
		fam, version, _ := strings.Cut(alias, "@")
		switch strings.ToLower(fam) {
		case "al2023", "bottlerocket":
			s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: strings.ToLower(fam) + "@" + version}}
		case "al2":
			c.warn(path, fmt.Sprintf("alias %s: Nodesmith does not bootstrap Amazon Linux 2 (EKS ends AL2 images with 1.32); converted to al2023@latest, review userData", alias))
			s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
		default:
			c.errorf("%s: alias %s: Nodesmith launches Linux nodes with AL2023 or Bottlerocket only", path, alias)
		}
		// amiFamily follows the alias; leaving it out keeps the two consistent.
		return
	}
	switch {
	case strings.HasPrefix(family, "Windows"):
		c.errorf("%s: amiFamily %s: Nodesmith launches Linux nodes only", spec.at("amiFamily"), family)
	case len(terms) == 0:
		switch family {
		case familyAL2023, familyBottlerocket:
			s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: strings.ToLower(family) + "@latest"}}
		case "AL2":
			c.warn(spec.at("amiFamily"), "AL2: Nodesmith does not bootstrap Amazon Linux 2 (EKS ends AL2 images with 1.32); converted to alias al2023@latest, review userData")
			s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
		default:
			c.errorf("%s: amiFamily %q without amiSelectorTerms: Nodesmith has no default image for it; select images with amiSelectorTerms", spec.at("amiFamily"), family)
		}
	default:
		s.AMISelectorTerms = terms
		switch family {
		case familyAL2023, familyBottlerocket, familyCustom, "":
			if family != "" {
				s.AMIFamily = &family
			}
		default:
			c.warn(spec.at("amiFamily"), fmt.Sprintf("%s: Nodesmith writes user data for AL2023 and Bottlerocket only; converted to Custom, so userData is passed as is and must join the node to the cluster", family))
			custom := familyCustom
			s.AMIFamily = &custom
		}
	}
}

func (c *converter) blockDevice(f *fields) awsv1.BlockDeviceMapping {
	var bd awsv1.BlockDeviceMapping
	bd.DeviceName = f.strPtr("deviceName")
	f.decode("rootVolume", &bd.RootVolume)
	if e := f.obj("ebs"); e != nil {
		ebs := &awsv1.BlockDevice{}
		e.decode("deleteOnTermination", &ebs.DeleteOnTermination)
		e.decode("encrypted", &ebs.Encrypted)
		e.decode("iops", &ebs.IOPS)
		ebs.KMSKeyID = e.strPtr("kmsKeyID")
		ebs.SnapshotID = e.strPtr("snapshotID")
		e.decode("throughput", &ebs.Throughput)
		if v := e.str("volumeSize"); v != "" {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				c.errorf("%s: %v", e.at("volumeSize"), err)
			}
			ebs.VolumeSize = &q
		}
		ebs.VolumeType = e.strPtr("volumeType")
		e.done()
		bd.EBS = ebs
	}
	f.done()
	return bd
}

// metadataOptions keeps the instance metadata settings. A v1beta1 class
// without them ran with Karpenter v1beta1's default hop limit of 2, which
// Nodesmith (like Karpenter v1) lowers to 1; the converted class keeps 2.
func (c *converter) metadataOptions(s *awsv1.EC2NodeClassSpec, f *fields, v1beta1 bool) {
	if f == nil {
		if v1beta1 {
			enabled, disabled, required, two := "enabled", "disabled", "required", int64(2)
			s.MetadataOptions = &awsv1.MetadataOptions{HTTPEndpoint: &enabled, HTTPProtocolIPv6: &disabled,
				HTTPPutResponseHopLimit: &two, HTTPTokens: &required}
			c.warn("spec.metadataOptions", "was unset, so v1beta1's default (httpPutResponseHopLimit 2) is written out; Nodesmith's default is 1, which blocks pods without host networking from the instance metadata")
		}
		return
	}
	m := &awsv1.MetadataOptions{}
	m.HTTPEndpoint = f.strPtr("httpEndpoint")
	m.HTTPProtocolIPv6 = f.strPtr("httpProtocolIPv6")
	f.decode("httpPutResponseHopLimit", &m.HTTPPutResponseHopLimit)
	m.HTTPTokens = f.strPtr("httpTokens")
	f.done()
	if v1beta1 && m.HTTPPutResponseHopLimit == nil {
		two := int64(2)
		m.HTTPPutResponseHopLimit = &two
		c.warn(f.at("httpPutResponseHopLimit"), "was unset, so v1beta1's default 2 is written out; Nodesmith's default is 1")
	}
	s.MetadataOptions = m
}
