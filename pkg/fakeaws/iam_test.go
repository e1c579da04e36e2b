package fakeaws_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// iamClient is the real IAM client aimed at the env's server.
func (e *env) iamClient() *iam.Client {
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 5
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			})
		},
	}
	return iam.NewFromConfig(cfg, func(o *iam.Options) { o.BaseEndpoint = aws.String(e.srv.URL()) })
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestIAMInstanceProfileLifecycle(t *testing.T) {
	e := newEnv(t)
	c := e.iamClient()
	role := fakeaws.NodeRoleName(cluster)
	name := aws.String("lab_profile")

	created, err := c.CreateInstanceProfile(e.ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: name, Path: aws.String("/nodesmith/"),
		Tags: []iamtypes.Tag{{Key: aws.String("nodesmith.sh/cluster"), Value: aws.String(cluster)}},
	})
	if err != nil {
		t.Fatalf("CreateInstanceProfile: %v", err)
	}
	ip := created.InstanceProfile
	if aws.ToString(ip.InstanceProfileName) != "lab_profile" || aws.ToString(ip.Path) != "/nodesmith/" ||
		aws.ToString(ip.Arn) != "arn:aws:iam::123456789012:instance-profile/nodesmith/lab_profile" ||
		len(aws.ToString(ip.InstanceProfileId)) != 21 || ip.CreateDate == nil || !ip.CreateDate.Equal(epoch) || len(ip.Roles) != 0 {
		t.Fatalf("created profile = %+v", ip)
	}
	if _, err := c.CreateInstanceProfile(e.ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name}); !isA[*iamtypes.EntityAlreadyExistsException](err) {
		t.Fatalf("second create: %v, want EntityAlreadyExists", err)
	}

	steps := []struct {
		name     string
		call     func() error
		wantCode string
	}{
		{"add a missing role", func() error {
			_, err := c.AddRoleToInstanceProfile(e.ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("nope")})
			return err
		}, "NoSuchEntity"},
		{"add the node role", func() error {
			_, err := c.AddRoleToInstanceProfile(e.ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String(role)})
			return err
		}, ""},
		{"a second role exceeds the quota of one", func() error {
			e.world.AddRole("other")
			_, err := c.AddRoleToInstanceProfile(e.ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("other")})
			return err
		}, "LimitExceeded"},
		{"tag", func() error {
			_, err := c.TagInstanceProfile(e.ctx, &iam.TagInstanceProfileInput{InstanceProfileName: name,
				Tags: []iamtypes.Tag{{Key: aws.String("team"), Value: aws.String("infra")}}})
			return err
		}, ""},
		{"delete with a role conflicts", func() error {
			_, err := c.DeleteInstanceProfile(e.ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name})
			return err
		}, "DeleteConflict"},
	}
	for _, s := range steps {
		if got := errCode(s.call()); got != s.wantCode {
			t.Fatalf("%s: error code %q, want %q", s.name, got, s.wantCode)
		}
	}

	got, err := c.GetInstanceProfile(e.ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
	if err != nil {
		t.Fatalf("GetInstanceProfile: %v", err)
	}
	gp := got.InstanceProfile
	if len(gp.Roles) != 1 || aws.ToString(gp.Roles[0].RoleName) != role || aws.ToString(gp.Roles[0].Arn) != "arn:aws:iam::123456789012:role/"+role {
		t.Fatalf("roles = %+v, want the node role", gp.Roles)
	}
	tags := map[string]string{}
	for _, tg := range gp.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if len(tags) != 2 || tags["nodesmith.sh/cluster"] != cluster || tags["team"] != "infra" {
		t.Fatalf("tags = %v", tags)
	}

	if _, err := c.RemoveRoleFromInstanceProfile(e.ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String(role)}); err != nil {
		t.Fatalf("RemoveRoleFromInstanceProfile: %v", err)
	}
	if _, err := c.RemoveRoleFromInstanceProfile(e.ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String(role)}); !isA[*iamtypes.NoSuchEntityException](err) {
		t.Fatalf("removing it again: %v, want NoSuchEntity", err)
	}
	if _, err := c.DeleteInstanceProfile(e.ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name}); err != nil {
		t.Fatalf("DeleteInstanceProfile: %v", err)
	}
	if _, err := c.GetInstanceProfile(e.ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name}); !isA[*iamtypes.NoSuchEntityException](err) {
		t.Fatalf("get after delete: %v, want NoSuchEntity", err)
	}
	if n := len(e.world.InstanceProfiles()); n != 0 {
		t.Fatalf("profiles left = %d", n)
	}
	st := e.world.Stats()
	if st["iam:CreateInstanceProfile"] != 2 || st["iam:AddRoleToInstanceProfile"] != 3 || st["iam:GetInstanceProfile"] != 2 {
		t.Fatalf("stats = %v", st)
	}
}

func isA[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

func TestIAMFaults(t *testing.T) {
	e := newEnv(t)
	c := e.iamClient()
	get := func() error {
		_, err := c.GetInstanceProfile(e.ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("missing")})
		return err
	}
	tests := []struct {
		name     string
		inject   func()
		wantCode string
		calls    int
	}{
		{"not found", func() {}, "NoSuchEntity", 1},
		{"access denied is not retried", func() { e.world.InjectAccessDenied("iam:GetInstanceProfile", 1) }, "AccessDenied", 1},
		{"a throttle is retried", func() { e.world.InjectThrottle("iam:GetInstanceProfile", 2) }, "NoSuchEntity", 3},
		{"a server error is retried", func() { e.world.InjectServerError("iam:GetInstanceProfile", 1) }, "NoSuchEntity", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.world.Stats()["iam:GetInstanceProfile"]
			tt.inject()
			if got := errCode(get()); got != tt.wantCode {
				t.Fatalf("code = %q, want %q", got, tt.wantCode)
			}
			if n := e.world.Stats()["iam:GetInstanceProfile"] - before; n != tt.calls {
				t.Fatalf("calls = %d, want %d", n, tt.calls)
			}
		})
	}
	// An unknown IAM action answers InvalidAction, not an EC2 error.
	_, err := c.ListRoles(e.ctx, &iam.ListRolesInput{})
	if errCode(err) != "InvalidAction" {
		t.Fatalf("ListRoles: %v, want InvalidAction", err)
	}
}

func TestCreateFleetChecksInstanceProfileWhenEnforced(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		e := newEnv(t, func(o *fakeaws.Options) { o.EnforceInstanceProfiles = enforce })
		img := e.image(t, "amazon-eks-node-al2023-x86_64-standard-1.37-*")
		lt, err := e.ec2.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String("with-profile"),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
				ImageId:            aws.String(img),
				IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("lab_nodes")},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		id := aws.ToString(lt.LaunchTemplate.LaunchTemplateId)
		out := e.fleet(t, id, "on-demand", "", 1, "m5.large")
		if !enforce {
			if len(out.Instances) != 1 {
				t.Fatalf("not enforced: launched %d, errors %+v", len(out.Instances), out.Errors)
			}
			continue
		}
		if len(out.Instances) != 0 || len(out.Errors) == 0 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterValue" {
			t.Fatalf("enforced, profile missing: instances %d errors %+v", len(out.Instances), out.Errors)
		}
		if _, err := e.world.CreateInstanceProfile("lab_nodes", "", nil); err != nil {
			t.Fatal(err)
		}
		if out := e.fleet(t, id, "on-demand", "", 1, "m5.large"); len(out.Instances) != 1 {
			t.Fatalf("enforced, profile exists: launched %d, errors %+v", len(out.Instances), out.Errors)
		}
	}
}

func TestNewWorldSeedsRoles(t *testing.T) {
	e := newEnv(t, func(o *fakeaws.Options) { o.Roles = []string{"extra"} })
	for _, role := range []string{fakeaws.NodeRoleName(cluster), "extra"} {
		if _, err := e.world.CreateInstanceProfile("p-"+role, "", nil); err != nil {
			t.Fatal(err)
		}
		if err := e.world.AddRoleToInstanceProfile("p-"+role, role); err != nil {
			t.Errorf("role %s was not pre-created: %v", role, err)
		}
	}
}
