package fakeaws_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func TestIAMGetRole(t *testing.T) {
	e := newEnv(t)
	c := e.iamClient()
	name := fakeaws.NodeRoleName(cluster)
	out, err := c.GetRole(e.ctx, &iam.GetRoleInput{RoleName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Role
	if aws.ToString(r.RoleName) != name || aws.ToString(r.Arn) != "arn:aws:iam::123456789012:role/"+name ||
		!strings.HasPrefix(aws.ToString(r.RoleId), "AROA") || aws.ToString(r.Path) != "/" || aws.ToInt32(r.MaxSessionDuration) != 3600 {
		t.Fatalf("role %+v", r)
	}
	doc, err := url.QueryUnescape(aws.ToString(r.AssumeRolePolicyDocument))
	var policy struct {
		Statement []struct{ Principal struct{ Service string } }
	}
	if err != nil || json.Unmarshal([]byte(doc), &policy) != nil || policy.Statement[0].Principal.Service != "ec2.amazonaws.com" {
		t.Fatalf("trust policy %q: %v", aws.ToString(r.AssumeRolePolicyDocument), err)
	}
	if _, err := c.GetRole(e.ctx, &iam.GetRoleInput{RoleName: aws.String("missing")}); errCode(err) != "NoSuchEntity" {
		t.Fatalf("missing role: %v", err)
	}
}

func TestIAMListInstanceProfiles(t *testing.T) {
	e := newEnv(t)
	c := e.iamClient()
	for _, p := range []struct{ name, path string }{{"a", "/nodesmith/"}, {"b", "/nodesmith/"}, {"c", "/nodesmith/x/"}, {"d", "/"}} {
		if _, err := e.world.CreateInstanceProfile(p.name, p.path, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.world.AddRoleToInstanceProfile("a", fakeaws.NodeRoleName(cluster)); err != nil {
		t.Fatal(err)
	}
	var pages [][]string
	in := &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/nodesmith/"), MaxItems: aws.Int32(2)}
	for {
		out, err := c.ListInstanceProfiles(e.ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ip := range out.InstanceProfiles {
			names = append(names, aws.ToString(ip.InstanceProfileName))
			if aws.ToString(ip.InstanceProfileName) == "a" && (len(ip.Roles) != 1 || aws.ToString(ip.Roles[0].RoleName) != fakeaws.NodeRoleName(cluster)) {
				t.Errorf("profile a roles %+v", ip.Roles)
			}
		}
		pages = append(pages, names)
		if !out.IsTruncated {
			break
		}
		in.Marker = out.Marker
	}
	if fmt.Sprint(pages) != "[[a b] [c]]" {
		t.Fatalf("pages %v", pages)
	}
	all, err := c.ListInstanceProfiles(e.ctx, &iam.ListInstanceProfilesInput{})
	if err != nil || len(all.InstanceProfiles) != 4 || all.IsTruncated {
		t.Fatalf("all: %v %+v", err, all)
	}
}

func TestIAMNameValidation(t *testing.T) {
	e := newEnv(t)
	c := e.iamClient()
	tag := func(k, v string) []iamtypes.Tag { return []iamtypes.Tag{{Key: aws.String(k), Value: aws.String(v)}} }
	tests := []struct {
		name   string
		call   func() error
		member string // "" when the call must succeed
	}{
		{"profile name with a space", func() error {
			_, err := c.CreateInstanceProfile(e.ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("has space")})
			return err
		}, "instanceProfileName"},
		{"profile name of 129 characters", func() error {
			_, err := c.CreateInstanceProfile(e.ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(strings.Repeat("p", 129))})
			return err
		}, "instanceProfileName"},
		{"profile name of 128 legal characters", func() error {
			_, err := c.CreateInstanceProfile(e.ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(strings.Repeat("p", 120) + "_+=,.@-")})
			return err
		}, ""},
		{"path without a trailing slash", func() error {
			_, err := c.CreateInstanceProfile(e.ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p2"), Path: aws.String("/nodesmith")})
			return err
		}, "path"},
		{"tag key with a comma", func() error {
			_, err := c.CreateInstanceProfile(e.ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p3"), Tags: tag("a,b", "v")})
			return err
		}, "tags.1.member.key"},
		{"role name of 65 characters", func() error {
			_, err := c.GetRole(e.ctx, &iam.GetRoleInput{RoleName: aws.String(strings.Repeat("r", 65))})
			return err
		}, "roleName"},
		{"role name with a slash", func() error {
			_, err := c.AddRoleToInstanceProfile(e.ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String("a/b")})
			return err
		}, "roleName"},
		{"MaxItems over 1000", func() error {
			_, err := c.ListInstanceProfiles(e.ctx, &iam.ListInstanceProfilesInput{MaxItems: aws.Int32(1001)})
			return err
		}, "maxItems"},
		{"path prefix without a slash", func() error {
			_, err := c.ListInstanceProfiles(e.ctx, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("nodesmith")})
			return err
		}, "pathPrefix"},
		{"tag value with a control character", func() error {
			_, err := c.TagInstanceProfile(e.ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("p"), Tags: tag("k", "a\x01")})
			return err
		}, "tags.1.member.value"},
	}
	for _, tt := range tests {
		err := tt.call()
		if tt.member == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if errCode(err) != "ValidationError" || !strings.Contains(err.Error(), "at '"+tt.member+"' failed to satisfy constraint") {
			t.Errorf("%s: %v, want a ValidationError naming %s", tt.name, err, tt.member)
		}
	}
}
