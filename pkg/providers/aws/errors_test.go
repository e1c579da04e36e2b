package aws

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		code string
		want Kind
	}{
		{"InsufficientInstanceCapacity", KindCapacity},
		{"UnfulfillableCapacity", KindCapacity},
		{"Unsupported", KindCapacity},
		{"InsufficientFreeAddressesInSubnet", KindCapacity},
		{"MaxSpotInstanceCountExceeded", KindQuota},
		{"VcpuLimitExceeded", KindQuota},
		{"UnauthorizedOperation", KindUnauthorized},
		{"InvalidInstanceID.NotFound", KindNotFound},
		{"InvalidLaunchTemplateName.NotFoundException", KindNotFound},
		{"ParameterNotFound", KindNotFound},
		{"NoSuchEntity", KindNotFound},
		{"InvalidParameterValue", KindOther},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			if got := Classify(tt.code); got != tt.want {
				t.Errorf("Classify(%s) = %v, want %v", tt.code, got, tt.want)
			}
		})
	}
}

func TestExplainUnauthorized(t *testing.T) {
	err := fmt.Errorf("creating fleet: %w", &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "You are not authorized"})
	got := explain(err)
	if !strings.Contains(got.Error(), "iam:PassRole") || !strings.Contains(got.Error(), "instance profile") {
		t.Errorf("explain = %v, want the instance-profile and PassRole hint", got)
	}
	var ae smithy.APIError
	if !errors.As(got, &ae) {
		t.Error("explain lost the API error")
	}
	other := &smithy.GenericAPIError{Code: "InvalidParameterValue"}
	if explain(other) != error(other) {
		t.Error("explain changed an error it has no hint for")
	}
}

func TestMarkFailuresUnauthorizedIsFatal(t *testing.T) {
	e := newEnv(t, envOpts{})
	retry, fatal := e.p.markFailures(planFor(), fleetErrors("UnauthorizedOperation", "InsufficientInstanceCapacity"))
	if retry || fatal == nil || !strings.Contains(fatal.Error(), "iam:PassRole") {
		t.Errorf("retry=%v fatal=%v, want no retry and the hint", retry, fatal)
	}
	retry, fatal = e.p.markFailures(planFor(), fleetErrors("VcpuLimitExceeded"))
	if retry || fatal == nil || !strings.Contains(fatal.Error(), "quota") {
		t.Errorf("retry=%v fatal=%v, want the quota error", retry, fatal)
	}
	retry, fatal = e.p.markFailures(planFor(), fleetErrors("InsufficientInstanceCapacity"))
	if !retry || fatal != nil {
		t.Errorf("retry=%v fatal=%v, want a retry", retry, fatal)
	}
}

func TestProviderID(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "aws:///us-east-1a/i-0123456789abcdef0", want: "i-0123456789abcdef0"},
		{in: providerID("us-east-1b", "i-1"), want: "i-1"},
		{in: "gce:///x/i-1", wantErr: true},
		{in: "aws:///us-east-1a/", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseProviderID(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseProviderID(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestLaunchToken(t *testing.T) {
	claim := func(uid, name string, attempt string) *nsv1.NodeClaim {
		c := &nsv1.NodeClaim{}
		c.Name, c.UID = name, types.UID(uid)
		if attempt != "" {
			c.Annotations = map[string]string{nsv1.AnnotationLaunchAttempt: attempt}
		}
		return c
	}
	base := launchToken(claim("u1", "a", ""), 0)
	tests := []struct {
		name  string
		token string
		same  bool
	}{
		{name: "a copy of the claim (a retry, a restart, another replica)", token: launchToken(claim("u1", "a", ""), 0), same: true},
		{name: "attempt 0 written out", token: launchToken(claim("u1", "a", "0"), 0), same: true},
		{name: "an unreadable attempt counts as 0", token: launchToken(claim("u1", "a", "x"), 0), same: true},
		{name: "the same name with another UID is another claim", token: launchToken(claim("u2", "a", ""), 0)},
		{name: "a rejected launch raised the attempt", token: launchToken(claim("u1", "a", "1"), 0)},
		{name: "the next fallback round of one Create", token: launchToken(claim("u1", "a", ""), 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.token == base) != tt.same {
				t.Errorf("token %s vs %s: same = %v, want %v", tt.token, base, tt.token == base, tt.same)
			}
			if len(tt.token) > 64 || !strings.HasPrefix(tt.token, "nodesmith-") {
				t.Errorf("token %q is not a valid EC2 ClientToken of ours", tt.token)
			}
		})
	}
	if batchToken([]string{"x", "y"}) != batchToken([]string{"y", "x"}) || batchToken([]string{"x", "y"}) == batchToken([]string{"x", "z"}) {
		t.Error("a merged call's token must depend on its members only, not on their order")
	}
}

func planFor() plan.Plan {
	it := catalog.NewInstanceType(catalog.Spec{Name: "m5.large", Architecture: "x86_64", VCPUs: 2, MemoryMiB: 8192}, nil, catalog.Options{})
	return plan.Plan{CapacityType: nsv1.CapacityTypeSpot, Options: []plan.Option{{InstanceType: it, Zone: "us-east-1a", SubnetID: "subnet-1", Price: 0.03}}}
}

func fleetErrors(codes ...string) []ec2types.CreateFleetError {
	var out []ec2types.CreateFleetError
	for _, c := range codes {
		out = append(out, ec2types.CreateFleetError{ErrorCode: aws.String(c), ErrorMessage: aws.String(c + " happened"), Lifecycle: ec2types.InstanceLifecycleSpot})
	}
	return out
}
