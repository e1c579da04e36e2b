package fakeaws_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

func TestLaunchThroughSDK(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "#!/bin/bash\necho hi")
	out := e.fleet(t, lt, "spot", "price-capacity-optimized", 3, "m5.large", "m5.xlarge")
	if len(out.Errors) != 0 {
		t.Fatalf("errors: %+v", out.Errors)
	}
	var ids []string
	for _, i := range out.Instances {
		ids = append(ids, i.InstanceIds...)
	}
	if len(ids) != 3 {
		t.Fatalf("launched %d, want 3", len(ids))
	}
	d, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range d.Reservations {
		for _, in := range r.Instances {
			n++
			if in.State.Name != "running" || in.Placement.AvailabilityZone == nil || in.InstanceLifecycle != "spot" {
				t.Errorf("instance %s: state %s lifecycle %s", *in.InstanceId, in.State.Name, in.InstanceLifecycle)
			}
		}
	}
	if n != 3 {
		t.Fatalf("described %d", n)
	}
}
