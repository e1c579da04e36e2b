package fakeaws_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func launched(out *ec2.CreateFleetOutput) []string {
	var ids []string
	for _, i := range out.Instances {
		ids = append(ids, i.InstanceIds...)
	}
	return ids
}

func describeIDs(t *testing.T, e *env, in *ec2.DescribeInstancesInput) []string {
	t.Helper()
	var ids []string
	p := ec2.NewDescribeInstancesPaginator(e.ec2, in)
	for p.HasMorePages() {
		out, err := p.NextPage(e.ctx)
		if err != nil {
			t.Fatalf("DescribeInstances: %v", err)
		}
		for _, r := range out.Reservations {
			if r.ReservationId == nil || r.OwnerId == nil {
				t.Fatalf("incomplete reservation %+v", r)
			}
			for _, in := range r.Instances {
				ids = append(ids, *in.InstanceId)
			}
		}
	}
	return ids
}

func TestDescribeInstancesFilters(t *testing.T) {
	e := newEnv(t, func(o *fakeaws.Options) { o.BootDelay = 30 * time.Second })
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	spot := launched(e.fleet(t, lt, "spot", "lowest-price", 2, "m5.large"))
	od := launched(e.fleet(t, lt, "on-demand", "", 3, "c5.large"))
	if len(spot) != 2 || len(od) != 3 {
		t.Fatalf("launched %d spot %d on-demand", len(spot), len(od))
	}
	if err := e.world.CreateTags([]string{od[0]}, map[string]string{"team": "a"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(31 * time.Second) // everything boots
	if _, err := e.ec2.TerminateInstances(e.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{od[2]}}); err != nil {
		t.Fatal(err)
	}
	inst, _ := e.world.Instance(spot[0])
	tests := []struct {
		name string
		in   ec2.DescribeInstancesInput
		want int
	}{
		{name: "all", want: 5},
		{name: "running", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-state-name", "running")}}, want: 4},
		{name: "pending or running", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-state-name", "pending", "running")}}, want: 4},
		{name: "terminated", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-state-name", "terminated")}}, want: 1},
		{name: "cluster tag from launch template", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("tag:nodesmith.sh/cluster", cluster)}}, want: 5},
		{name: "tag-key", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("tag-key", "team")}}, want: 1},
		{name: "tag value", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("tag:team", "b")}}, want: 0},
		{name: "instance-id", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-id", spot...)}}, want: 2},
		{name: "spot lifecycle", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-lifecycle", "spot")}}, want: 2},
		{name: "type", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-type", "c5.*")}}, want: 3},
		{name: "subnet-id", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("subnet-id", inst.SubnetID), filter("instance-id", inst.ID)}}, want: 1},
		// A terminated instance has left its VPC, subnet and interface, as in EC2.
		{name: "vpc-id", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("vpc-id", inst.VpcID)}}, want: 4},
		{name: "private-dns-name", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("private-dns-name", "ip-"+dashes(inst.PrivateIP)+".ec2.internal")}}, want: 1},
		{name: "private-dns-name wildcard", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("private-dns-name", "*.ec2.internal")}}, want: 4},
		{name: "launch-time", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("launch-time", "2026-11-29T12:00:00.000Z")}}, want: 5},
		{name: "launch-time day wildcard", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("launch-time", "2026-11-29*")}}, want: 5},
		{name: "launch-time other day", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("launch-time", "2026-11-30*")}}, want: 0},
		{name: "network-interface.subnet-id", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("network-interface.subnet-id", inst.SubnetID), filter("instance-id", inst.ID)}}, want: 1},
		{name: "network-interface.subnet-id skips the terminated", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("network-interface.subnet-id", "subnet-*")}}, want: 4},
		{name: "network-interface.network-interface-id", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("network-interface.network-interface-id", "eni-"+inst.ID[2:])}}, want: 1},
		{name: "instance.group-name", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance.group-name", cluster+"-node")}}, want: 5},
		{name: "availability-zone-id", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("availability-zone-id", "use1-az*")}}, want: 5},
		{name: "key-name: the fake has no key pairs", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("key-name", "*")}}, want: 0},
		{name: "image-id", in: ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("image-id", inst.ImageID)}}, want: 5},
		{name: "InstanceIds", in: ec2.DescribeInstancesInput{InstanceIds: od}, want: 3},
		{name: "ids and state filter", in: ec2.DescribeInstancesInput{InstanceIds: od, Filters: []ec2types.Filter{filter("instance-state-name", "running")}}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeIDs(t, e, &tt.in); len(got) != tt.want {
				t.Fatalf("got %d instances %v, want %d", len(got), got, tt.want)
			}
		})
	}
}

func TestDescribeInstancesShapeAndErrors(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "arm64", "")
	ids := launched(e.fleet(t, lt, "spot", "price-capacity-optimized", 1, "m6g.large"))
	out, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	in := out.Reservations[0].Instances[0]
	w, _ := e.world.Instance(ids[0])
	if len(in.NetworkInterfaces) != 1 {
		t.Fatalf("network interfaces %+v, want the primary one", in.NetworkInterfaces)
	}
	eni := in.NetworkInterfaces[0]
	checks := []struct {
		field     string
		got, want string
	}{
		{"type", string(in.InstanceType), "m6g.large"},
		{"arch", string(in.Architecture), "arm64"},
		{"zone", aws.ToString(in.Placement.AvailabilityZone), w.Zone},
		{"subnet", aws.ToString(in.SubnetId), w.SubnetID},
		{"ip", aws.ToString(in.PrivateIpAddress), w.PrivateIP},
		{"dns", aws.ToString(in.PrivateDnsName), "ip-" + dashes(w.PrivateIP) + ".ec2.internal"},
		{"lifecycle", string(in.InstanceLifecycle), "spot"},
		{"launch time", aws.ToTime(in.LaunchTime).UTC().Format(time.RFC3339), epoch.Format(time.RFC3339)},
		{"state", string(in.State.Name), "running"},
		{"sg", aws.ToString(in.SecurityGroups[0].GroupName), cluster + "-node"},
		{"eni id", aws.ToString(eni.NetworkInterfaceId), "eni-" + w.ID[2:]},
		{"eni subnet", aws.ToString(eni.SubnetId), w.SubnetID},
		{"eni address", aws.ToString(eni.PrivateIpAddress), w.PrivateIP},
		{"eni attachment", aws.ToString(eni.Attachment.AttachmentId), "eni-attach-" + w.ID[2:]},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	errs := []struct {
		name string
		in   ec2.DescribeInstancesInput
		code string
	}{
		{"unknown id", ec2.DescribeInstancesInput{InstanceIds: []string{"i-00000000000000000"}}, "InvalidInstanceID.NotFound"},
		{"malformed id", ec2.DescribeInstancesInput{InstanceIds: []string{"i-nope"}}, "InvalidInstanceID.Malformed"},
		{"an upper-case id is malformed", ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789ABCDEF0"}}, "InvalidInstanceID.Malformed"},
		{"ids with MaxResults", ec2.DescribeInstancesInput{InstanceIds: ids, MaxResults: aws.Int32(5)}, "InvalidParameterCombination"},
		{"MaxResults too small", ec2.DescribeInstancesInput{MaxResults: aws.Int32(2)}, "InvalidParameterValue"},
		{"unknown filter", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("colour", "red")}}, "InvalidParameterValue"},
		{"documented filter the fake does not simulate", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("ebs-optimized", "true")}}, "InvalidParameterValue"},
	}
	for _, c := range errs {
		if _, err := e.ec2.DescribeInstances(e.ctx, &c.in); apiCode(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
}

func dashes(ip string) string {
	b := []byte(ip)
	for i := range b {
		if b[i] == '.' {
			b[i] = '-'
		}
	}
	return string(b)
}

func TestDescribeInstancesPagination(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	want := launched(e.fleet(t, lt, "on-demand", "", 12, "m5.large", "m5.xlarge"))
	var pages int
	seen := map[string]bool{}
	p := ec2.NewDescribeInstancesPaginator(e.ec2, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	for p.HasMorePages() {
		out, err := p.NextPage(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				seen[*in.InstanceId] = true
			}
		}
	}
	if pages != 3 || len(seen) != len(want) {
		t.Fatalf("%d pages, %d instances; want 3 pages and %d", pages, len(seen), len(want))
	}
	for _, id := range want {
		if !seen[id] {
			t.Errorf("instance %s never listed", id)
		}
	}
}

func TestTerminateInstances(t *testing.T) {
	e := newEnv(t, func(o *fakeaws.Options) { o.ShutdownDelay = 10 * time.Second })
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	e.world.SetCapacity("m5.large", "us-east-1a", "on-demand", 1)
	e.world.SetCapacity("m5.large", "us-east-1b", "on-demand", 0)
	e.world.SetCapacity("m5.large", "us-east-1c", "on-demand", 0)
	ids := launched(e.fleet(t, lt, "on-demand", "", 1, "m5.large"))
	out, err := e.ec2.TerminateInstances(e.ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	c := out.TerminatingInstances[0]
	if c.PreviousState.Name != "running" || c.CurrentState.Name != "shutting-down" || aws.ToInt32(c.CurrentState.Code) != 32 {
		t.Fatalf("state change %s → %s", c.PreviousState.Name, c.CurrentState.Name)
	}
	if full := e.fleet(t, lt, "on-demand", "", 1, "m5.large"); len(launched(full)) != 0 {
		t.Fatalf("capacity came back before the instance terminated")
	}
	e.clock.Step(10 * time.Second)
	if got := describeIDs(t, e, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-state-name", "terminated")}}); len(got) != 1 {
		t.Fatalf("terminated instances %v", got)
	}
	if again := e.fleet(t, lt, "on-demand", "", 1, "m5.large"); len(launched(again)) != 1 {
		t.Fatalf("terminated instance's capacity was not returned: %+v", again.Errors)
	}
	errs := []struct{ name, id, code string }{
		{"unknown id", "i-0123456789abcdef0", "InvalidInstanceID.NotFound"},
		{"malformed id", "i-zz", "InvalidInstanceID.Malformed"},
		{"an upper-case id is malformed", "i-0123456789ABCDEF0", "InvalidInstanceID.Malformed"},
	}
	for _, c := range errs {
		if _, err := e.ec2.TerminateInstances(e.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{c.id}}); apiCode(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	e.clock.Step(2 * time.Hour)
	if got := describeIDs(t, e, &ec2.DescribeInstancesInput{InstanceIds: nil, Filters: []ec2types.Filter{filter("instance-id", ids...)}}); len(got) != 0 {
		t.Fatalf("terminated instance still listed after retention: %v", got)
	}
}

func TestCreateTags(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	ids := launched(e.fleet(t, lt, "on-demand", "", 2, "m5.large"))
	_, err := e.ec2.CreateTags(e.ctx, &ec2.CreateTagsInput{
		Resources: ids,
		Tags:      []ec2types.Tag{{Key: aws.String("Name"), Value: aws.String("node-a")}, {Key: aws.String("nodesmith.sh/nodeclaim"), Value: aws.String("default-abc")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := describeIDs(t, e, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("tag:nodesmith.sh/nodeclaim", "default-abc")}}); len(got) != 2 {
		t.Fatalf("tagged instances %v", got)
	}
	_, err = e.ec2.CreateTags(e.ctx, &ec2.CreateTagsInput{Resources: []string{ids[0], "i-0000000000000000f"}, Tags: []ec2types.Tag{{Key: aws.String("x"), Value: aws.String("y")}}})
	if apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Fatalf("unknown resource: %v", err)
	}
	if in, _ := e.world.Instance(ids[0]); in.Tags["x"] != "" {
		t.Fatalf("a failed CreateTags changed tags")
	}
}
