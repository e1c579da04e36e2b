package fakeaws_test

import (
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// manySpecs is a world with 130 types so DescribeInstanceTypes needs two default pages.
func manySpecs() []fakeaws.Spec {
	var out []fakeaws.Spec
	for i := 0; i < 130; i++ {
		arch := "x86_64"
		if i%2 == 1 {
			arch = "arm64"
		}
		out = append(out, fakeaws.Spec{Name: "z" + strconv.Itoa(i) + ".large", Arch: arch, VCPU: 2, MemoryMiB: 4096,
			MaxENIs: 3, IPv4PerENI: 10, OnDemandPrice: 0.1, SpotPrice: 0.03, Zones: []string{"us-east-1a"}})
	}
	return out
}

func TestDescribeInstanceTypesPagination(t *testing.T) {
	e := newEnv(t, func(o *fakeaws.Options) { o.Specs = manySpecs() })
	tests := []struct {
		name      string
		in        ec2.DescribeInstanceTypesInput
		wantPages int
		wantTypes int
	}{
		{name: "default page size 100", wantPages: 2, wantTypes: 130},
		{name: "MaxResults 50", in: ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(50)}, wantPages: 3, wantTypes: 130},
		{name: "arch filter", in: ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{filter("processor-info.supported-architecture", "arm64")}}, wantPages: 1, wantTypes: 65},
		{name: "named types", in: ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"z1.large", "z2.large"}}, wantPages: 1, wantTypes: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ec2.NewDescribeInstanceTypesPaginator(e.ec2, &tt.in)
			pages, n := 0, 0
			for p.HasMorePages() {
				out, err := p.NextPage(e.ctx)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				n += len(out.InstanceTypes)
			}
			if pages != tt.wantPages || n != tt.wantTypes {
				t.Fatalf("%d pages %d types, want %d and %d", pages, n, tt.wantPages, tt.wantTypes)
			}
		})
	}
	if _, err := e.ec2.DescribeInstanceTypes(e.ctx, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(101)}); apiCode(err) != "InvalidParameterValue" {
		t.Fatalf("MaxResults 101: %v", err)
	}
	if _, err := e.ec2.DescribeInstanceTypes(e.ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"q9.huge"}}); apiCode(err) != "InvalidInstanceType" {
		t.Fatalf("unknown type: %v", err)
	}
}

func TestDescribeInstanceTypesShape(t *testing.T) {
	e := newEnv(t)
	out, err := e.ec2.DescribeInstanceTypes(e.ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"g4dn.xlarge", "m6g.large"}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ec2types.InstanceTypeInfo{}
	for _, it := range out.InstanceTypes {
		byName[string(it.InstanceType)] = it
	}
	g, m := byName["g4dn.xlarge"], byName["m6g.large"]
	checks := []struct {
		field string
		got   any
		want  any
	}{
		{"g4dn vcpus", aws.ToInt32(g.VCpuInfo.DefaultVCpus), int32(4)},
		{"g4dn memory", aws.ToInt64(g.MemoryInfo.SizeInMiB), int64(16384)},
		{"g4dn gpu", aws.ToString(g.GpuInfo.Gpus[0].Name), "T4"},
		{"g4dn gpu count", aws.ToInt32(g.GpuInfo.Gpus[0].Count), int32(1)},
		{"g4dn nvme", aws.ToInt64(g.InstanceStorageInfo.TotalSizeInGB), int64(125)},
		{"m6g arch", m.ProcessorInfo.SupportedArchitectures[0], ec2types.ArchitectureTypeArm64},
		{"m6g enis", aws.ToInt32(m.NetworkInfo.MaximumNetworkInterfaces), int32(3)},
		{"m6g ips per eni", aws.ToInt32(m.NetworkInfo.Ipv4AddressesPerInterface), int32(10)},
		{"m6g usage classes", len(m.SupportedUsageClasses), 2},
		{"m6g hypervisor", m.Hypervisor, ec2types.InstanceTypeHypervisorNitro},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
}

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	specs := fakeaws.DefaultSpecs()
	specs[0].Zones = []string{"us-east-1a"} // t3.medium only in one zone
	e := newEnv(t, func(o *fakeaws.Options) { o.Specs = specs })
	tests := []struct {
		name string
		in   ec2.DescribeInstanceTypeOfferingsInput
		want int
	}{
		{name: "region", want: len(specs)},
		{name: "zones", in: ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone}, want: 3*len(specs) - 2},
		{name: "zone filter", in: ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: []ec2types.Filter{filter("location", "us-east-1b")}}, want: len(specs) - 1},
		{name: "type filter", in: ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: []ec2types.Filter{filter("instance-type", "t3.medium")}}, want: 1},
		{name: "zone ids", in: ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZoneId, Filters: []ec2types.Filter{filter("location", "use1-az1")}}, want: len(specs)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ec2.NewDescribeInstanceTypeOfferingsPaginator(e.ec2, &tt.in)
			n := 0
			for p.HasMorePages() {
				out, err := p.NextPage(e.ctx)
				if err != nil {
					t.Fatal(err)
				}
				n += len(out.InstanceTypeOfferings)
			}
			if n != tt.want {
				t.Fatalf("%d offerings, want %d", n, tt.want)
			}
		})
	}
}

func TestDescribeSpotPriceHistory(t *testing.T) {
	e := newEnv(t)
	e.world.SetPrice("m5.large", "us-east-1b", "spot", 0.0421)
	out, err := e.ec2.DescribeSpotPriceHistory(e.ctx, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       []ec2types.InstanceType{"m5.large"},
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		StartTime:           aws.Time(epoch),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.SpotPriceHistory) != 6 {
		t.Fatalf("%d entries, want 3 zones × 2 descriptions", len(out.SpotPriceHistory))
	}
	for _, sp := range out.SpotPriceHistory {
		if aws.ToString(sp.AvailabilityZone) == "us-east-1b" && aws.ToString(sp.SpotPrice) != "0.042100" {
			t.Errorf("1b price %s", aws.ToString(sp.SpotPrice))
		}
		if !aws.ToTime(sp.Timestamp).Equal(epoch) {
			t.Errorf("timestamp %v", sp.Timestamp)
		}
	}
	p := ec2.NewDescribeSpotPriceHistoryPaginator(e.ec2, &ec2.DescribeSpotPriceHistoryInput{MaxResults: aws.Int32(10)})
	n := 0
	for p.HasMorePages() {
		page, err := p.NextPage(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.SpotPriceHistory)
	}
	if want := 3 * len(fakeaws.DefaultSpecs()); n != want {
		t.Fatalf("paginated %d entries, want %d", n, want)
	}
}

func TestLaunchTemplates(t *testing.T) {
	e := newEnv(t)
	a := e.launchTemplate(t, "nodesmith/default/a", "x86_64", "")
	b := e.launchTemplate(t, "nodesmith/default/b", "arm64", "")
	_ = e.launchTemplate(t, "other", "arm64", "")
	if _, err := e.ec2.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("other"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{},
	}); apiCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := e.ec2.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("bad-ami"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0123456789abcdef0")},
	}); apiCode(err) != "InvalidAMIID.NotFound" {
		t.Fatalf("unknown image: %v", err)
	}
	if _, err := e.ec2.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("bad-ami"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-missing")},
	}); apiCode(err) != "InvalidAMIID.Malformed" {
		t.Fatalf("malformed image: %v", err)
	}
	tests := []struct {
		name     string
		in       ec2.DescribeLaunchTemplatesInput
		want     []string
		wantCode string
	}{
		{name: "all", want: []string{"nodesmith/default/a", "nodesmith/default/b", "other"}},
		{name: "name filter wildcard", in: ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{filter("launch-template-name", "nodesmith/*")}}, want: []string{"nodesmith/default/a", "nodesmith/default/b"}},
		{name: "by id", in: ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{b}}, want: []string{"nodesmith/default/b"}},
		{name: "by name", in: ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"other"}}, want: []string{"other"}},
		{name: "missing name", in: ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"gone"}}, wantCode: "InvalidLaunchTemplateName.NotFoundException"},
		{name: "missing id", in: ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{"lt-0123456789abcdef0"}}, wantCode: "InvalidLaunchTemplateId.NotFound"},
		{name: "malformed id", in: ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{"lt-1"}}, wantCode: "InvalidLaunchTemplateId.Malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.ec2.DescribeLaunchTemplates(e.ctx, &tt.in)
			if tt.wantCode != "" {
				if apiCode(err) != tt.wantCode {
					t.Fatalf("error %v, want %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, lt := range out.LaunchTemplates {
				names = append(names, aws.ToString(lt.LaunchTemplateName))
				if lt.LaunchTemplateId == nil || lt.CreateTime == nil || aws.ToInt64(lt.LatestVersionNumber) != 1 {
					t.Errorf("incomplete template %+v", lt)
				}
			}
			if !equal(names, tt.want) {
				t.Fatalf("got %v, want %v", names, tt.want)
			}
		})
	}
	del, err := e.ec2.DeleteLaunchTemplate(e.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(a)})
	if err != nil || aws.ToString(del.LaunchTemplate.LaunchTemplateName) != "nodesmith/default/a" {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if _, err := e.ec2.DeleteLaunchTemplate(e.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(a)}); apiCode(err) != "InvalidLaunchTemplateId.NotFound" {
		t.Fatalf("second delete: %v", err)
	}
	lts := e.world.LaunchTemplates()
	if len(lts) != 2 || lts[0].Data["ImageId"] == "" || len(lts[0].SecurityGroupIDs) != 1 {
		t.Fatalf("templates after delete %+v", lts)
	}
}
