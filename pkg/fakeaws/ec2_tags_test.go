package fakeaws_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func tag(k string, v *string) ec2types.Tag { return ec2types.Tag{Key: aws.String(k), Value: v} }

// A tag value with a character XML cannot carry used to go into the
// DescribeInstances answer raw, and no client could parse it again.
func TestControlCharacterTagKeepsDescribeInstancesParseable(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	id := launched(e.fleet(t, lt, "on-demand", "", 1, "m5.large"))[0]
	if _, err := e.ec2.CreateTags(e.ctx, &ec2.CreateTagsInput{Resources: []string{id},
		Tags: []ec2types.Tag{tag("note", aws.String("bell\x01ring <&> \r\n"))}}); err != nil {
		t.Fatal(err)
	}
	out, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatalf("DescribeInstances after tagging with U+0001: %v", err)
	}
	var got string
	for _, tg := range out.Reservations[0].Instances[0].Tags {
		if aws.ToString(tg.Key) == "note" {
			got = aws.ToString(tg.Value)
		}
	}
	if want := "bell\uFFFDring <&> \r\n"; got != want {
		t.Fatalf("tag value %q, want %q", got, want)
	}
}

func TestDeleteTags(t *testing.T) {
	tests := []struct {
		name string
		tags []ec2types.Tag
		want []string // user tag keys left, sorted
	}{
		{name: "by key", tags: []ec2types.Tag{tag("team", nil)}, want: []string{"empty", "env"}},
		{name: "by key and the matching value", tags: []ec2types.Tag{tag("team", aws.String("a"))}, want: []string{"empty", "env"}},
		{name: "a different value keeps the tag", tags: []ec2types.Tag{tag("team", aws.String("b"))}, want: []string{"empty", "env", "team"}},
		{name: "an empty value matches only an empty value", tags: []ec2types.Tag{tag("empty", aws.String("")), tag("env", aws.String(""))}, want: []string{"env", "team"}},
		{name: "a key the resource lacks", tags: []ec2types.Tag{tag("absent", nil)}, want: []string{"empty", "env", "team"}},
		{name: "no tags: every user tag", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			lt := e.launchTemplate(t, "nodes", "x86_64", "")
			id := launched(e.fleet(t, lt, "on-demand", "", 1, "m5.large"))[0]
			if err := e.world.CreateTags([]string{id}, map[string]string{"team": "a", "env": "prod", "empty": ""}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.ec2.DeleteTags(e.ctx, &ec2.DeleteTagsInput{Resources: []string{id}, Tags: tt.tags}); err != nil {
				t.Fatal(err)
			}
			in, _ := e.world.Instance(id)
			var left []string
			for _, k := range sortedKeysOf(in.Tags) {
				if !strings.HasPrefix(k, "aws:") && k != "nodesmith.sh/cluster" {
					left = append(left, k)
				}
			}
			if fmt.Sprint(left) != fmt.Sprint(tt.want) {
				t.Fatalf("tags left %v, want %v", left, tt.want)
			}
			if in.Tags["aws:ec2:fleet-id"] == "" {
				t.Fatal("DeleteTags removed an aws: tag")
			}
		})
	}
}

func TestTagErrors(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	id := launched(e.fleet(t, lt, "on-demand", "", 1, "m5.large"))[0]
	many := make([]ec2types.Tag, 0, 51)
	for i := 0; i < 51; i++ {
		many = append(many, tag(fmt.Sprintf("k%d", i), aws.String("v")))
	}
	create := []struct {
		name, code string
		ids        []string
		tags       []ec2types.Tag
	}{
		{"aws: prefix is reserved", "InvalidParameterValue", []string{id}, []ec2types.Tag{tag("aws:mine", aws.String("x"))}},
		{"key over 127 characters", "InvalidParameterValue", []string{id}, []ec2types.Tag{tag(strings.Repeat("k", 128), aws.String("x"))}},
		{"value over 256 characters", "InvalidParameterValue", []string{id}, []ec2types.Tag{tag("k", aws.String(strings.Repeat("v", 257)))}},
		{"more than 50 user tags", "TagLimitExceeded", []string{id}, many},
		{"malformed instance id", "InvalidInstanceID.Malformed", []string{"i-zz"}, []ec2types.Tag{tag("k", aws.String("v"))}},
		{"malformed subnet id", "InvalidSubnetID.Malformed", []string{"subnet-1"}, []ec2types.Tag{tag("k", aws.String("v"))}},
		{"unknown id family", "InvalidID", []string{"vol-0123456789abcdef0"}, []ec2types.Tag{tag("k", aws.String("v"))}},
		{"unknown image", "InvalidAMIID.NotFound", []string{"ami-0123456789abcdef0"}, []ec2types.Tag{tag("k", aws.String("v"))}},
	}
	for _, tt := range create {
		if _, err := e.ec2.CreateTags(e.ctx, &ec2.CreateTagsInput{Resources: tt.ids, Tags: tt.tags}); apiCode(err) != tt.code {
			t.Errorf("CreateTags %s: %v, want %s", tt.name, err, tt.code)
		}
	}
	// 127 characters and exactly 50 user tags (with the template's cluster tag) are still fine.
	if _, err := e.ec2.CreateTags(e.ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: append(many[:48:48], tag(strings.Repeat("k", 127), aws.String("v")))}); err != nil {
		t.Errorf("50 tags with a 127-character key: %v", err)
	}
	del := []struct {
		name, code string
		ids        []string
		tags       []ec2types.Tag
	}{
		{"aws: prefix", "InvalidParameterValue", []string{id}, []ec2types.Tag{tag("aws:ec2:fleet-id", nil)}},
		{"unknown instance", "InvalidInstanceID.NotFound", []string{"i-0123456789abcdef0"}, nil},
		{"malformed group", "InvalidGroupId.Malformed", []string{"sg-x"}, nil},
	}
	for _, tt := range del {
		if _, err := e.ec2.DeleteTags(e.ctx, &ec2.DeleteTagsInput{Resources: tt.ids, Tags: tt.tags}); apiCode(err) != tt.code {
			t.Errorf("DeleteTags %s: %v, want %s", tt.name, err, tt.code)
		}
	}
}
