package aws

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// TestMissingSpotServiceLinkedRoleNamesTheFix: in an account without the
// EC2 Spot service-linked role, a spot launch is rejected as an account
// setup problem whose message says how to create the role; on-demand still
// launches.
func TestMissingSpotServiceLinkedRoleNamesTheFix(t *testing.T) {
	e := newEnv(t, envOpts{world: func(o *fakeaws.Options) { o.NoSpotServiceLinkedRole = true }})
	spot := newClaim("spot-1", reqIn(corev1.LabelInstanceTypeStable, "m5.large"), reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeSpot))
	_, err := e.p.Create(e.ctx, spot)
	if !cloudprovider.IsLaunchRejected(err) {
		t.Fatalf("Create = %v, want a launch rejection", err)
	}
	if r := cloudprovider.AccountSetupReason(err); r != ReasonSpotServiceLinkedRole {
		t.Errorf("account setup reason %q, want %q (err %v)", r, ReasonSpotServiceLinkedRole, err)
	}
	for _, want := range []string{"AuthFailure.ServiceLinkedRoleCreationNotPermitted", "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com", "create_spot_service_linked_role"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if n := len(e.world.Instances()); n != 0 {
		t.Errorf("instances = %d, want 0", n)
	}
	od := e.create(newClaim("od-1", reqIn(corev1.LabelInstanceTypeStable, "m5.large"), reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand)))
	if od.Status.CapacityType != nsv1.CapacityTypeOnDemand {
		t.Errorf("on-demand claim launched as %s", od.Status.CapacityType)
	}
}

// TestPingAsksEC2: Ping answers nil when EC2 answers and names the call
// when it does not.
func TestPingAsksEC2(t *testing.T) {
	e := newEnv(t, envOpts{})
	if err := e.p.Ping(e.ctx); err != nil {
		t.Fatalf("Ping = %v", err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := e.p.Ping(ctx); err == nil || !strings.Contains(err.Error(), "DescribeSubnets") {
		t.Errorf("Ping on a cancelled context = %v, want an error naming DescribeSubnets", err)
	}
}
