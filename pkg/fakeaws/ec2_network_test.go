package fakeaws_test

import (
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestDescribeSubnets(t *testing.T) {
	e := newEnv(t)
	all := e.world.Subnets()
	public := all[len(all)-1]
	tests := []struct {
		name     string
		in       ec2.DescribeSubnetsInput
		want     int
		wantCode string
	}{
		{name: "all", want: 4},
		{name: "discovery tag", in: ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:nodesmith.sh/discovery", cluster)}}, want: 3},
		{name: "tag-key", in: ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag-key", "nodesmith.sh/discovery")}}, want: 3},
		{name: "tag wildcard value", in: ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:Name", cluster+"-private-*")}}, want: 3},
		{name: "zone and tag", in: ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag-key", "Name"), filter("availability-zone", "us-east-1a")}}, want: 2},
		{name: "subnet-id filter", in: ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("subnet-id", public.ID)}}, want: 1},
		{name: "vpc-id", in: ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("vpc-id", public.VpcID)}}, want: 4},
		{name: "other vpc", in: ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("vpc-id", "vpc-none")}}, want: 0},
		{name: "by id", in: ec2.DescribeSubnetsInput{SubnetIds: []string{public.ID}}, want: 1},
		{name: "unknown id", in: ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0123456789abcdef0"}}, wantCode: "InvalidSubnetID.NotFound"},
		{name: "malformed id", in: ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0000"}}, wantCode: "InvalidSubnetID.Malformed"},
		{name: "unknown filter", in: ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("colour", "red")}}, wantCode: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.ec2.DescribeSubnets(e.ctx, &tt.in)
			if tt.wantCode != "" {
				if apiCode(err) != tt.wantCode {
					t.Fatalf("error %v, want code %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Subnets) != tt.want {
				t.Fatalf("got %d subnets, want %d", len(out.Subnets), tt.want)
			}
			for _, s := range out.Subnets {
				if s.SubnetId == nil || s.VpcId == nil || s.AvailabilityZone == nil || aws.ToInt32(s.AvailableIpAddressCount) <= 0 {
					t.Errorf("incomplete subnet %+v", s)
				}
			}
		})
	}
}

func TestDescribeSubnetsPagination(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 8; i++ {
		e.world.AddSubnet(fakeaws.Subnet{Zone: "us-east-1b", CIDR: "10.1.0.0/24", FreeIPs: 10})
	}
	p := ec2.NewDescribeSubnetsPaginator(e.ec2, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)})
	pages, seen := 0, map[string]bool{}
	for p.HasMorePages() {
		out, err := p.NextPage(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, s := range out.Subnets {
			if seen[*s.SubnetId] {
				t.Fatalf("subnet %s on two pages", *s.SubnetId)
			}
			seen[*s.SubnetId] = true
		}
	}
	if pages != 3 || len(seen) != 12 {
		t.Fatalf("pages %d subnets %d, want 3 and 12", pages, len(seen))
	}
	_, err := e.ec2.DescribeSubnets(e.ctx, &ec2.DescribeSubnetsInput{NextToken: aws.String("garbage")})
	if apiCode(err) != "InvalidPaginationToken" {
		t.Fatalf("bad token: %v", err)
	}
}

func TestDescribeSecurityGroups(t *testing.T) {
	e := newEnv(t)
	groups := e.world.SecurityGroups()
	tests := []struct {
		name     string
		in       ec2.DescribeSecurityGroupsInput
		want     []string
		wantCode string
	}{
		{name: "all", want: []string{"default", cluster + "-node"}},
		{name: "discovery tag", in: ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("tag:nodesmith.sh/discovery", cluster)}}, want: []string{cluster + "-node"}},
		{name: "group-name filter", in: ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("group-name", "default")}}, want: []string{"default"}},
		{name: "group-id filter", in: ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("group-id", groups[0].ID)}}, want: []string{groups[0].Name}},
		{name: "vpc-id", in: ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("vpc-id", groups[0].VpcID)}}, want: []string{"default", cluster + "-node"}},
		{name: "GroupNames", in: ec2.DescribeSecurityGroupsInput{GroupNames: []string{cluster + "-node"}}, want: []string{cluster + "-node"}},
		{name: "GroupIds", in: ec2.DescribeSecurityGroupsInput{GroupIds: []string{groups[1].ID}}, want: []string{groups[1].Name}},
		{name: "unknown id", in: ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-0123456789abcdef0"}}, wantCode: "InvalidGroup.NotFound"},
		{name: "malformed id", in: ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-nope"}}, wantCode: "InvalidGroupId.Malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.ec2.DescribeSecurityGroups(e.ctx, &tt.in)
			if tt.wantCode != "" {
				if apiCode(err) != tt.wantCode {
					t.Fatalf("error %v, want %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range out.SecurityGroups {
				got = append(got, *g.GroupName)
			}
			sort.Strings(got)
			if !equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribeImages(t *testing.T) {
	e := newEnv(t)
	custom := e.world.AddImage(fakeaws.Image{Name: "team-golden-2026", Arch: "arm64", Tags: map[string]string{"team": "platform"}})
	tests := []struct {
		name     string
		in       ec2.DescribeImagesInput
		want     int
		wantCode string
	}{
		// Amazon's: AL2023 standard ×2, nvidia ×2, neuron ×1; Bottlerocket standard ×2, nvidia ×2;
		// for each of the two Kubernetes versions before, AL2023 and Bottlerocket standard ×2.
		{name: "all", want: 18},
		{name: "owner amazon", in: ec2.DescribeImagesInput{Owners: []string{"amazon"}}, want: 17},
		{name: "owner self", in: ec2.DescribeImagesInput{Owners: []string{"self"}}, want: 1},
		{name: "owner id", in: ec2.DescribeImagesInput{Owners: []string{"602401143452"}}, want: 17},
		{name: "name wildcard", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("name", "bottlerocket-*")}}, want: 8},                                            // standard and nvidia, two architectures, and the two versions before
		{name: "name and arch", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("name", "amazon-eks-node-al2023-*"), filter("architecture", "arm64")}}, want: 4}, // standard and nvidia, and the two versions before
		{name: "image-id filter", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("image-id", custom)}}, want: 1},
		{name: "owner-id filter", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("owner-id", "123456789012")}}, want: 1},
		{name: "tag", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag:team", "platform")}}, want: 1},
		{name: "ImageIds", in: ec2.DescribeImagesInput{ImageIds: []string{custom}}, want: 1},
		{name: "unknown id", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-0123abcd"}}, wantCode: "InvalidAMIID.NotFound"},
		{name: "malformed id", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-0000"}}, wantCode: "InvalidAMIID.Malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.ec2.DescribeImages(e.ctx, &tt.in)
			if tt.wantCode != "" {
				if apiCode(err) != tt.wantCode {
					t.Fatalf("error %v, want %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Images) != tt.want {
				t.Fatalf("got %d images, want %d", len(out.Images), tt.want)
			}
			for _, img := range out.Images {
				if img.ImageId == nil || img.Name == nil || img.CreationDate == nil || img.Architecture == "" || img.State != ec2types.ImageStateAvailable {
					t.Errorf("incomplete image %+v", img)
				}
			}
		})
	}
}

func TestDescribeAvailabilityZones(t *testing.T) {
	e := newEnv(t)
	out, err := e.ec2.DescribeAvailabilityZones(e.ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, z := range out.AvailabilityZones {
		names = append(names, *z.ZoneName)
		if z.ZoneId == nil || z.State != ec2types.AvailabilityZoneStateAvailable || aws.ToString(z.RegionName) != "us-east-1" {
			t.Errorf("incomplete zone %+v", z)
		}
	}
	if !equal(names, []string{"us-east-1a", "us-east-1b", "us-east-1c"}) {
		t.Fatalf("zones %v", names)
	}
	out, err = e.ec2.DescribeAvailabilityZones(e.ctx, &ec2.DescribeAvailabilityZonesInput{Filters: []ec2types.Filter{filter("zone-name", "us-east-1b")}})
	if err != nil || len(out.AvailabilityZones) != 1 || *out.AvailabilityZones[0].ZoneName != "us-east-1b" {
		t.Fatalf("filtered: %v %+v", err, out)
	}
}

func TestUnknownActionIsInvalidAction(t *testing.T) {
	e := newEnv(t)
	_, err := e.ec2.DescribeVpcs(e.ctx, &ec2.DescribeVpcsInput{})
	if apiCode(err) != "InvalidAction" {
		t.Fatalf("DescribeVpcs: %v, want InvalidAction", err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorMessage() != "The action DescribeVpcs is not valid for this web service." {
		t.Fatalf("message %q", ae.ErrorMessage())
	}
}

func TestThrottlingIsRetriedBySDK(t *testing.T) {
	tests := []struct {
		name      string
		faults    int
		wantErr   string
		wantCalls int
	}{
		{name: "two throttles then success", faults: 2, wantCalls: 3},
		{name: "more throttles than attempts", faults: 10, wantErr: "RequestLimitExceeded", wantCalls: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.world.InjectThrottle("DescribeSubnets", tt.faults)
			_, err := e.ec2.DescribeSubnets(e.ctx, &ec2.DescribeSubnetsInput{})
			if apiCode(err) != tt.wantErr {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if got := e.world.Stats()["DescribeSubnets"]; got != tt.wantCalls {
				t.Fatalf("%d calls reached the server, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestServerErrorIsRetried(t *testing.T) {
	e := newEnv(t)
	e.world.InjectServerError("*", 1)
	if _, err := e.ec2.DescribeImages(e.ctx, &ec2.DescribeImagesInput{}); err != nil {
		t.Fatalf("a single 500 should be retried: %v", err)
	}
	if got := e.world.Stats()["DescribeImages"]; got != 2 {
		t.Fatalf("calls %d, want 2", got)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestInjectedLatencyDelaysResponses(t *testing.T) {
	e := newEnv(t)
	e.world.SetLatency(40 * time.Millisecond)
	start := time.Now()
	if _, err := e.ec2.DescribeAvailabilityZones(e.ctx, &ec2.DescribeAvailabilityZonesInput{}); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 40*time.Millisecond {
		t.Fatalf("answered after %v, before the injected 40ms", elapsed)
	}
}

func TestDryRun(t *testing.T) {
	e := newEnv(t)
	in := e.fleetInput(t, e.launchTemplate(t, "nodes", "x86_64", ""), "on-demand", "", 1, "m5.large")
	in.DryRun = aws.Bool(true)
	_, err := e.ec2.CreateFleet(e.ctx, in)
	if apiCode(err) != "DryRunOperation" {
		t.Fatalf("DryRun: %v", err)
	}
	if n := len(e.world.Instances()); n != 0 {
		t.Fatalf("a dry run changed the world")
	}
}
