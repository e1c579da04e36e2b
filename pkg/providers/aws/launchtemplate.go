package aws

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/userdata"
)

// TagLaunchTemplateHash marks templates Nodesmith made, with the hash of their settings.
const TagLaunchTemplateHash = "aws.nodesmith.sh/launch-template-hash"

// templateSpec is everything a launch template holds. Equal specs share
// one template, named by the hash of the spec: the name is the cache key
// both here and in EC2, so a restart finds the templates it made.
type templateSpec struct {
	Cluster         string                     `json:"cluster"`
	ImageID         string                     `json:"imageID"`
	SecurityGroups  []string                   `json:"securityGroups"`
	UserData        string                     `json:"userData"`
	BlockDevices    []awsv1.BlockDeviceMapping `json:"blockDevices"`
	Metadata        awsv1.MetadataOptions      `json:"metadata"`
	Tags            map[string]string          `json:"tags"`
	InstanceProfile string                     `json:"instanceProfile"`
	PublicIP        *bool                      `json:"publicIP,omitempty"`
	Monitoring      bool                       `json:"monitoring"`
	// CapacityReservationID is the reservation a reserved launch targets;
	// CapacityBlock says it is a Capacity Block (market type capacity-block).
	CapacityReservationID string `json:"capacityReservationID,omitempty"`
	CapacityBlock         bool   `json:"capacityBlock,omitempty"`
}

func (s *templateSpec) hash() string {
	b, _ := json.Marshal(s) // maps marshal sorted: the hash is stable
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:10])
}

// name is the template's EC2 name.
func (s *templateSpec) name() string { return "nodesmith/" + s.hash() }

func defaultBlockDevices(family string) []awsv1.BlockDeviceMapping {
	gp3, twenty, yes := "gp3", resource.MustParse("20Gi"), true
	if family == userdata.FamilyBottlerocket {
		four := resource.MustParse("4Gi")
		return []awsv1.BlockDeviceMapping{
			{DeviceName: aws.String("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: &four, VolumeType: &gp3, Encrypted: &yes, DeleteOnTermination: &yes}},
			{DeviceName: aws.String("/dev/xvdb"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: &twenty, VolumeType: &gp3, Encrypted: &yes, DeleteOnTermination: &yes}},
		}
	}
	return []awsv1.BlockDeviceMapping{
		{DeviceName: aws.String("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: &twenty, VolumeType: &gp3, Encrypted: &yes, DeleteOnTermination: &yes}},
	}
}

func metadataOptions(m *awsv1.MetadataOptions) awsv1.MetadataOptions {
	out := awsv1.MetadataOptions{
		HTTPEndpoint: aws.String("enabled"), HTTPProtocolIPv6: aws.String("disabled"),
		HTTPPutResponseHopLimit: aws.Int64(1), HTTPTokens: aws.String("required"),
	}
	if m == nil {
		return out
	}
	if m.HTTPEndpoint != nil {
		out.HTTPEndpoint = m.HTTPEndpoint
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HTTPProtocolIPv6 = m.HTTPProtocolIPv6
	}
	if m.HTTPPutResponseHopLimit != nil {
		out.HTTPPutResponseHopLimit = m.HTTPPutResponseHopLimit
	}
	if m.HTTPTokens != nil {
		out.HTTPTokens = m.HTTPTokens
	}
	return out
}

// ensureLaunchTemplate returns the name of the template for spec, creating
// it when EC2 does not have it yet.
func (p *Provider) ensureLaunchTemplate(ctx context.Context, spec *templateSpec) (string, error) {
	name := spec.name()
	p.ltMu.Lock()
	defer p.ltMu.Unlock()
	p.ltUsed[name] = p.clock.Now()
	if p.templates[name] {
		return name, nil
	}
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if err == nil && len(out.LaunchTemplates) > 0 {
		p.templates[name] = true
		return name, nil
	}
	if err != nil && !IsNotFound(err) {
		return "", fmt.Errorf("describing launch template %s: %w", name, explain(err))
	}
	if _, err := p.ec2.CreateLaunchTemplate(ctx, createTemplateInput(name, spec)); err != nil && errorCode(err) != codeLaunchTemplateExists {
		return "", fmt.Errorf("creating launch template %s: %w", name, explain(err))
	}
	p.templates[name] = true
	return name, nil
}

// forgetLaunchTemplate drops a template someone deleted behind our back,
// so the next launch recreates it.
func (p *Provider) forgetLaunchTemplate(name string) {
	p.ltMu.Lock()
	defer p.ltMu.Unlock()
	delete(p.templates, name)
}

func createTemplateInput(name string, s *templateSpec) *ec2.CreateLaunchTemplateInput {
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:  aws.String(s.ImageID),
		UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(s.UserData))),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(aws.ToString(s.Metadata.HTTPEndpoint)),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(aws.ToString(s.Metadata.HTTPProtocolIPv6)),
			HttpPutResponseHopLimit: aws.Int32(int32(aws.ToInt64(s.Metadata.HTTPPutResponseHopLimit))),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(aws.ToString(s.Metadata.HTTPTokens)),
		},
		Monitoring: &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(s.Monitoring)},
	}
	if s.CapacityReservationID != "" {
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(s.CapacityReservationID)},
		}
		if s.CapacityBlock {
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		}
	}
	if s.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(s.InstanceProfile)}
	}
	if s.PublicIP != nil {
		// The public-IP switch lives on the network interface, and then the groups must too.
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: s.PublicIP, Groups: s.SecurityGroups,
		}}
	} else {
		data.SecurityGroupIds = s.SecurityGroups
	}
	for _, bd := range s.BlockDevices {
		data.BlockDeviceMappings = append(data.BlockDeviceMappings, blockDevice(bd))
	}
	tags := ec2Tags(s.Tags)
	data.TagSpecifications = []ec2types.LaunchTemplateTagSpecificationRequest{
		{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
		{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
	}
	ltTags := map[string]string{TagLaunchTemplateHash: s.hash()}
	for k, v := range s.Tags {
		ltTags[k] = v
	}
	return &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(ltTags)}},
	}
}

func blockDevice(bd awsv1.BlockDeviceMapping) ec2types.LaunchTemplateBlockDeviceMappingRequest {
	out := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: bd.DeviceName}
	if e := bd.EBS; e != nil {
		ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
			DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID, SnapshotId: e.SnapshotID,
		}
		if e.IOPS != nil {
			ebs.Iops = aws.Int32(int32(*e.IOPS))
		}
		if e.Throughput != nil {
			ebs.Throughput = aws.Int32(int32(*e.Throughput))
		}
		if e.VolumeSize != nil {
			// EBS sizes are whole GiB; round up so the volume is never smaller than asked.
			gib := (e.VolumeSize.Value() + (1<<30 - 1)) >> 30
			ebs.VolumeSize = aws.Int32(int32(gib))
		}
		if e.VolumeType != nil {
			ebs.VolumeType = ec2types.VolumeType(*e.VolumeType)
		}
		out.Ebs = ebs
	}
	return out
}

// ec2Tags converts a map to EC2 tags, sorted by key (stable requests).
func ec2Tags(m map[string]string) []ec2types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// forgetLaunchTemplates drops every cached template name.
func (p *Provider) forgetLaunchTemplates() {
	p.ltMu.Lock()
	defer p.ltMu.Unlock()
	p.templates = map[string]bool{}
}
