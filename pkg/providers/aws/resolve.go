package aws

import (
	"context"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/userdata"
)

// Resolved is what an EC2NodeClass's selectors point at right now.
type Resolved struct {
	Subnets         []ResolvedSubnet
	SecurityGroups  []awsv1.SecurityGroup
	AMIs            []awsv1.AMI
	Family          string
	InstanceProfile string
	// CapacityReservations are the active reservations the class selects.
	CapacityReservations []awsv1.CapacityReservation
}

// ResolvedSubnet is a subnet with the addresses it has left.
type ResolvedSubnet struct {
	awsv1.Subnet
	FreeIPs int64
}

// Zones are the zones the subnets cover, sorted.
func (r *Resolved) Zones() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range r.Subnets {
		if !seen[s.Zone] {
			seen[s.Zone] = true
			out = append(out, s.Zone)
		}
	}
	sort.Strings(out)
	return out
}

// ApplyTo writes the resolved values into a node class status (conditions
// are the controller's).
func (r *Resolved) ApplyTo(st *awsv1.EC2NodeClassStatus) {
	st.Subnets = st.Subnets[:0]
	for _, s := range r.Subnets {
		st.Subnets = append(st.Subnets, s.Subnet)
	}
	st.SecurityGroups = append(st.SecurityGroups[:0], r.SecurityGroups...)
	st.AMIs = append(st.AMIs[:0], r.AMIs...)
	st.InstanceProfile = r.InstanceProfile
	st.CapacityReservations = append(st.CapacityReservations[:0], r.CapacityReservations...)
}

// ResolveError says which part of a node class did not resolve, in words a
// user can act on; the controller puts it into that condition.
type ResolveError struct {
	// Condition is the EC2NodeClass condition type (awsv1.ConditionSubnetsReady, …).
	Condition string
	// Reason is a CamelCase condition reason.
	Reason  string
	Message string
	Err     error
}

func (e *ResolveError) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}
func (e *ResolveError) Unwrap() error { return e.Err }

// Resolve looks up the node class's subnets, security groups, images and
// instance profile (creating the managed profile when an IAM client is
// configured; see instanceprofile.go). Every failure is a *ResolveError.
func (p *Provider) Resolve(ctx context.Context, nc *awsv1.EC2NodeClass) (*Resolved, error) {
	subnets, err := p.resolveSubnets(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		return nil, err
	}
	groups, err := p.resolveSecurityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		return nil, err
	}
	family := familyOf(nc)
	amis, err := p.resolveAMIs(ctx, nc.Spec.AMISelectorTerms)
	if err != nil {
		return nil, err
	}
	profile, err := p.resolveInstanceProfile(ctx, nc)
	if err != nil {
		return nil, err
	}
	reservations, err := p.resolveCapacityReservations(ctx, nc.Spec.CapacityReservationSelectorTerms)
	if err != nil {
		return nil, err
	}
	return &Resolved{Subnets: subnets, SecurityGroups: groups, AMIs: amis, Family: family, InstanceProfile: profile, CapacityReservations: reservations}, nil
}

func familyOf(nc *awsv1.EC2NodeClass) string {
	if nc.Spec.AMIFamily != nil && *nc.Spec.AMIFamily != "" {
		return *nc.Spec.AMIFamily
	}
	for _, t := range nc.Spec.AMISelectorTerms {
		if strings.HasPrefix(strings.ToLower(t.Alias), "bottlerocket@") {
			return userdata.FamilyBottlerocket
		}
	}
	return userdata.FamilyAL2023
}

// tagFilters turns a selector's tags into EC2 filters; "*" matches any value.
func tagFilters(tags map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var fs []ec2types.Filter
	for _, k := range keys {
		if tags[k] == "*" {
			fs = append(fs, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
			continue
		}
		fs = append(fs, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{tags[k]}})
	}
	return fs
}

const hintSubnets = "no subnets matched the node class's subnetSelectorTerms; check the " + awsv1.TagDiscovery +
	" tag on at least one private subnet per zone"

func (p *Provider) resolveSubnets(ctx context.Context, terms []awsv1.SubnetSelectorTerm) ([]ResolvedSubnet, error) {
	seen := map[string]bool{}
	var out []ResolvedSubnet
	for _, t := range terms {
		in := &ec2.DescribeSubnetsInput{Filters: tagFilters(t.Tags)}
		if t.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{t.ID}})
		}
		pg := ec2.NewDescribeSubnetsPaginator(p.ec2, in)
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, &ResolveError{Condition: awsv1.ConditionSubnetsReady, Reason: "DescribeSubnetsFailed", Message: "describing subnets", Err: explain(err)}
			}
			for _, s := range page.Subnets {
				id := aws.ToString(s.SubnetId)
				if seen[id] {
					continue
				}
				seen[id] = true
				out = append(out, ResolvedSubnet{
					Subnet:  awsv1.Subnet{ID: id, Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)},
					FreeIPs: int64(aws.ToInt32(s.AvailableIpAddressCount)),
				})
			}
		}
	}
	if len(out) == 0 {
		return nil, &ResolveError{Condition: awsv1.ConditionSubnetsReady, Reason: "SubnetsNotFound", Message: hintSubnets}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (p *Provider) resolveSecurityGroups(ctx context.Context, terms []awsv1.SecurityGroupSelectorTerm) ([]awsv1.SecurityGroup, error) {
	seen := map[string]bool{}
	var out []awsv1.SecurityGroup
	for _, t := range terms {
		in := &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(t.Tags)}
		if t.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{t.ID}})
		}
		if t.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{t.Name}})
		}
		pg := ec2.NewDescribeSecurityGroupsPaginator(p.ec2, in)
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, &ResolveError{Condition: awsv1.ConditionSecurityGroupsReady, Reason: "DescribeSecurityGroupsFailed", Message: "describing security groups", Err: explain(err)}
			}
			for _, g := range page.SecurityGroups {
				id := aws.ToString(g.GroupId)
				if !seen[id] {
					seen[id] = true
					out = append(out, awsv1.SecurityGroup{ID: id, Name: aws.ToString(g.GroupName)})
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, &ResolveError{Condition: awsv1.ConditionSecurityGroupsReady, Reason: "SecurityGroupsNotFound",
			Message: "no security groups matched the node class's securityGroupSelectorTerms; check the " + awsv1.TagDiscovery + " tag on the cluster's node security group"}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (p *Provider) resolveAMIs(ctx context.Context, terms []awsv1.AMISelectorTerm) ([]awsv1.AMI, error) {
	fail := func(reason, msg string, err error) error {
		return &ResolveError{Condition: awsv1.ConditionAMIsReady, Reason: reason, Message: msg, Err: err}
	}
	byArch := map[string]ec2types.Image{}
	var aliasAMIs []awsv1.AMI
	for _, t := range terms {
		if t.Alias != "" {
			images, err := aliasImages(t.Alias, p.opts.KubernetesVersion)
			if err != nil {
				return nil, fail("InvalidAlias", "resolving the AMI alias", err)
			}
			for _, img := range images {
				out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(img.parameter)})
				if err != nil {
					if IsNotFound(err) {
						continue // the family has no such variant for this architecture (or version)
					}
					return nil, fail("GetParameterFailed", "reading the SSM parameter "+img.parameter, explain(err))
				}
				if out.Parameter != nil && aws.ToString(out.Parameter.Value) != "" {
					aliasAMIs = append(aliasAMIs, awsv1.AMI{ID: aws.ToString(out.Parameter.Value), Name: t.Alias,
						Architecture: img.arch, Requirements: img.requirements})
				}
			}
			continue
		}
		in := &ec2.DescribeImagesInput{Filters: tagFilters(t.Tags)}
		if t.ID != "" {
			in.ImageIds = []string{t.ID}
		}
		if t.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{t.Name}})
		}
		if t.Owner != "" {
			in.Owners = []string{t.Owner}
		}
		pg := ec2.NewDescribeImagesPaginator(p.ec2, in)
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				if IsNotFound(err) {
					break
				}
				return nil, fail("DescribeImagesFailed", "describing images", explain(err))
			}
			for _, img := range page.Images {
				arch := catalog.KubeArch(string(img.Architecture))
				// The newest image per architecture wins, as EKS recommends the latest.
				if cur, ok := byArch[arch]; !ok || aws.ToString(img.CreationDate) > aws.ToString(cur.CreationDate) {
					byArch[arch] = img
				}
			}
		}
	}
	out := aliasAMIs
	for arch, img := range byArch {
		out = append(out, awsv1.AMI{ID: aws.ToString(img.ImageId), Name: aws.ToString(img.Name), Architecture: arch, Requirements: archRequirements(arch)})
	}
	if len(out) == 0 {
		return nil, fail("AMIsNotFound", "no image matched the node class's amiSelectorTerms", nil)
	}
	// Stable order (the status must not flap); a type meets at most one
	// variant of an alias, so the order never decides which image it gets.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Architecture != out[j].Architecture {
			return out[i].Architecture < out[j].Architecture
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
