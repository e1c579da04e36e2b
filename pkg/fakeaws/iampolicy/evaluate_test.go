package iampolicy

import (
	"strings"
	"testing"
)

const doc = `{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "Describe", "Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*",
     "Condition": {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}},
    {"Sid": "CreateTagged", "Effect": "Allow", "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
     "Resource": ["arn:aws:ec2:us-east-1:*:instance/*", "arn:aws:ec2:us-east-1:*:fleet/*"],
     "Condition": {"StringEquals": {"aws:RequestTag/nodesmith.sh/cluster": "lab"},
                   "ForAllValues:StringLike": {"aws:TagKeys": ["nodesmith.sh/*", "Name", "team"]}}},
    {"Sid": "Terminate", "Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "arn:aws:ec2:us-east-1:*:instance/*",
     "Condition": {"StringEquals": {"aws:ResourceTag/nodesmith.sh/cluster": "lab"}}},
    {"Sid": "NoProd", "Effect": "Deny", "Action": "ec2:TerminateInstances", "Resource": "*",
     "Condition": {"StringEquals": {"aws:ResourceTag/env": "prod"}}},
    {"Sid": "PassNode", "Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::123456789012:role/lab-node",
     "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}},
    {"Sid": "Untagged", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
     "Condition": {"Null": {"aws:RequestTag/owner": "true"}, "StringEqualsIfExists": {"ec2:CreateAction": "CreateFleet"}}},
    {"Sid": "NotSQS", "Effect": "Allow", "NotAction": "sqs:*", "Resource": "arn:aws:ssm:us-east-1::parameter/aws/service/*"},
    {"Sid": "Profiles", "Effect": "Allow", "Action": "iam:GetInstanceProfile", "NotResource": "arn:aws:iam::*:instance-profile/secret/*"},
    {"Sid": "AnyTeam", "Effect": "Allow", "Action": "ec2:DeleteLaunchTemplate", "Resource": "*",
     "Condition": {"ForAnyValue:StringEquals": {"aws:TagKeys": "team"}, "StringNotEquals": {"aws:ResourceTag/keep": "yes"}}}
  ]
}`

func TestEvaluate(t *testing.T) {
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ctx := func(kv ...string) map[string][]string {
		m := map[string][]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = append(m[kv[i]], kv[i+1])
		}
		return m
	}
	tests := []struct {
		name    string
		req     Request
		allowed bool
		deny    bool
		by      string
	}{
		{"describe in the region", Request{"ec2:DescribeSubnets", "*", ctx("aws:RequestedRegion", "us-east-1")}, true, false, "Describe"},
		{"action case-insensitive", Request{"EC2:describeimages", "*", ctx("aws:requestedregion", "us-east-1")}, true, false, "Describe"},
		{"describe in another region", Request{"ec2:DescribeSubnets", "*", ctx("aws:RequestedRegion", "eu-west-1")}, false, false, ""},
		{"create with the cluster tag", Request{"ec2:CreateFleet", "arn:aws:ec2:us-east-1:123456789012:fleet/*",
			ctx("aws:RequestTag/nodesmith.sh/cluster", "lab", "aws:TagKeys", "nodesmith.sh/cluster", "aws:TagKeys", "Name")}, true, false, "CreateTagged"},
		{"create without the tag", Request{"ec2:CreateFleet", "arn:aws:ec2:us-east-1:123456789012:fleet/*", ctx("aws:TagKeys", "Name")}, false, false, ""},
		{"create with another cluster's tag", Request{"ec2:RunInstances", "arn:aws:ec2:us-east-1:123456789012:instance/*", ctx("aws:RequestTag/nodesmith.sh/cluster", "prod")}, false, false, ""},
		{"create with a tag key outside the set", Request{"ec2:CreateFleet", "arn:aws:ec2:us-east-1:123456789012:fleet/*",
			ctx("aws:RequestTag/nodesmith.sh/cluster", "lab", "aws:TagKeys", "nodesmith.sh/cluster", "aws:TagKeys", "cost-center")}, false, false, ""},
		{"create on a resource type not listed", Request{"ec2:CreateFleet", "arn:aws:ec2:us-east-1:123456789012:volume/*", ctx("aws:RequestTag/nodesmith.sh/cluster", "lab")}, false, false, ""},
		{"terminate ours", Request{"ec2:TerminateInstances", "arn:aws:ec2:us-east-1:123456789012:instance/i-1", ctx("aws:ResourceTag/nodesmith.sh/cluster", "lab")}, true, false, "Terminate"},
		{"terminate someone else's", Request{"ec2:TerminateInstances", "arn:aws:ec2:us-east-1:123456789012:instance/i-2", ctx()}, false, false, ""},
		{"explicit deny wins", Request{"ec2:TerminateInstances", "arn:aws:ec2:us-east-1:123456789012:instance/i-3",
			ctx("aws:ResourceTag/nodesmith.sh/cluster", "lab", "aws:ResourceTag/env", "prod")}, false, true, "NoProd"},
		{"pass the node role to EC2", Request{"iam:PassRole", "arn:aws:iam::123456789012:role/lab-node", ctx("iam:PassedToService", "ec2.amazonaws.com")}, true, false, "PassNode"},
		{"pass another role", Request{"iam:PassRole", "arn:aws:iam::123456789012:role/admin", ctx("iam:PassedToService", "ec2.amazonaws.com")}, false, false, ""},
		{"pass to another service", Request{"iam:PassRole", "arn:aws:iam::123456789012:role/lab-node", ctx("iam:PassedToService", "lambda.amazonaws.com")}, false, false, ""},
		{"Null true and IfExists without the key", Request{"ec2:CreateTags", "arn:aws:ec2:us-east-1:1:instance/i-1", ctx()}, true, false, "Untagged"},
		{"Null true fails when the key is there", Request{"ec2:CreateTags", "arn:aws:ec2:us-east-1:1:instance/i-1", ctx("aws:RequestTag/owner", "x")}, false, false, ""},
		{"IfExists applies when present", Request{"ec2:CreateTags", "arn:aws:ec2:us-east-1:1:instance/i-1", ctx("ec2:CreateAction", "RunInstances")}, false, false, ""},
		{"NotAction allows other services", Request{"ssm:GetParameter", "arn:aws:ssm:us-east-1::parameter/aws/service/eks/x", nil}, true, false, "NotSQS"},
		{"NotAction excludes", Request{"sqs:ReceiveMessage", "arn:aws:ssm:us-east-1::parameter/aws/service/eks/x", nil}, false, false, ""},
		{"NotResource allows others", Request{"iam:GetInstanceProfile", "arn:aws:iam::1:instance-profile/nodesmith/a", nil}, true, false, "Profiles"},
		{"NotResource excludes", Request{"iam:GetInstanceProfile", "arn:aws:iam::1:instance-profile/secret/a", nil}, false, false, ""},
		{"ForAnyValue with a match", Request{"ec2:DeleteLaunchTemplate", "x", ctx("aws:TagKeys", "a", "aws:TagKeys", "team")}, true, false, "AnyTeam"},
		{"ForAnyValue without the key", Request{"ec2:DeleteLaunchTemplate", "x", ctx()}, false, false, ""},
		{"StringNotEquals with the value", Request{"ec2:DeleteLaunchTemplate", "x", ctx("aws:TagKeys", "team", "aws:ResourceTag/keep", "yes")}, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Evaluate(tt.req)
			if d.Allowed != tt.allowed || d.ExplicitDeny != tt.deny || d.Statement != tt.by {
				t.Fatalf("decision %+v, want allowed %v deny %v by %q", d, tt.allowed, tt.deny, tt.by)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"bad effect", `{"Statement":[{"Effect":"Maybe","Action":"a:b","Resource":"*"}]}`, "Effect"},
		{"no action", `{"Statement":[{"Effect":"Allow","Resource":"*"}]}`, "Action"},
		{"no resource", `{"Statement":[{"Effect":"Allow","Action":"a:b"}]}`, "Resource"},
		{"numeric operator", `{"Statement":[{"Effect":"Allow","Action":"a:b","Resource":"*","Condition":{"NumericLessThan":{"k":"1"}}}]}`, "NumericLessThan"},
		{"policy variable", `{"Statement":[{"Effect":"Allow","Action":"a:b","Resource":"*","Condition":{"StringEquals":{"k":"${aws:username}"}}}]}`, "policy variables"},
		{"unknown field", `{"Statement":[{"Effect":"Allow","Action":"a:b","Resource":"*","Principal":"*"}]}`, "Principal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestWildcard(t *testing.T) {
	tests := []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*c", "abbbc", true}, {"a*c", "abd", false}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"arn:aws:ec2:*:*:instance/*", "arn:aws:ec2:us-east-1:1:instance/i-1", true}, {"nodesmith.sh/*", "kubernetes.io/x", false},
		{"*b*b", "abab", true}, {"", "", true}, {"", "x", false},
	}
	for _, tt := range tests {
		if got := Wildcard(tt.p, tt.s); got != tt.want {
			t.Errorf("Wildcard(%q, %q) = %v, want %v", tt.p, tt.s, got, tt.want)
		}
	}
}
