package aws

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func TestSubnetSelectorMatchingNothing(t *testing.T) {
	e := newEnv(t, envOpts{})
	nc := defaultNodeClass()
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{awsv1.TagDiscovery: "other-cluster"}}}
	e.addNodeClass(nc)
	_, err := e.p.Create(e.ctx, newClaim("c1"))
	if !cloudprovider.IsNodeClassNotReady(err) {
		t.Fatalf("err = %v, want NodeClassNotReady", err)
	}
	if !strings.Contains(err.Error(), "check the nodesmith.sh/discovery tag on at least one private subnet per zone") {
		t.Errorf("error lacks the hint: %v", err)
	}
	var re *ResolveError
	if !errors.As(err, &re) || re.Condition != awsv1.ConditionSubnetsReady {
		t.Errorf("err = %v, want a ResolveError for %s", err, awsv1.ConditionSubnetsReady)
	}
	if n := len(e.world.Instances()); n != 0 {
		t.Errorf("instances = %d, want 0", n)
	}
}

func TestResolve(t *testing.T) {
	e := newEnv(t, envOpts{})
	subnets := e.world.Subnets()
	groups := e.world.SecurityGroups()
	var nodeSG fakeaws.SecurityGroup
	for _, g := range groups {
		if g.Tags[awsv1.TagDiscovery] == testCluster {
			nodeSG = g
		}
	}
	custom := e.world.AddImage(fakeaws.Image{Name: "my-golden-amd64", Arch: "x86_64", Tags: map[string]string{"golden": "yes"}})
	tests := []struct {
		name      string
		mutate    func(*awsv1.EC2NodeClassSpec)
		check     func(t *testing.T, r *Resolved)
		wantError string
	}{
		{name: "tags, alias, role", check: func(t *testing.T, r *Resolved) {
			if len(r.Subnets) != 3 || len(r.Zones()) != 3 {
				t.Errorf("subnets = %d in %d zones, want the 3 tagged private ones", len(r.Subnets), len(r.Zones()))
			}
			// al2023: standard, nvidia and neuron on amd64; standard and nvidia on arm64.
			variants := map[string]int{}
			for _, a := range r.AMIs {
				key := a.Architecture
				for _, q := range a.Requirements {
					if q.Operator == corev1.NodeSelectorOpExists {
						key += " " + q.Key
					}
				}
				variants[key]++
			}
			want := map[string]int{"amd64": 1, "amd64 " + awsv1.LabelInstanceGPUCount: 1, "amd64 " + awsv1.LabelInstanceAcceleratorCount: 1,
				"arm64": 1, "arm64 " + awsv1.LabelInstanceGPUCount: 1}
			if !maps.Equal(variants, want) {
				t.Errorf("amis = %+v\nvariants %v, want %v", r.AMIs, variants, want)
			}
			if r.InstanceProfile != ManagedInstanceProfileName(testCluster, catalog.DefaultRegion, "default") || r.Family != "AL2023" {
				t.Errorf("profile %q family %q", r.InstanceProfile, r.Family)
			}
		}},
		{name: "ids and names", mutate: func(s *awsv1.EC2NodeClassSpec) {
			s.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: subnets[0].ID}}
			s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: nodeSG.Name}}
			s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"golden": "yes"}}}
			s.Role, s.InstanceProfile = nil, aws.String("my-profile")
		}, check: func(t *testing.T, r *Resolved) {
			if len(r.Subnets) != 1 || r.Subnets[0].ID != subnets[0].ID {
				t.Errorf("subnets = %+v", r.Subnets)
			}
			if len(r.SecurityGroups) != 1 || r.SecurityGroups[0].ID != nodeSG.ID {
				t.Errorf("groups = %+v, want %s", r.SecurityGroups, nodeSG.ID)
			}
			if len(r.AMIs) != 1 || r.AMIs[0].ID != custom {
				t.Errorf("amis = %+v, want %s", r.AMIs, custom)
			}
			if r.InstanceProfile != "my-profile" {
				t.Errorf("profile = %q", r.InstanceProfile)
			}
		}},
		{name: "no security group", mutate: func(s *awsv1.EC2NodeClassSpec) {
			s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "nope"}}
		}, wantError: awsv1.ConditionSecurityGroupsReady},
		{name: "no image", mutate: func(s *awsv1.EC2NodeClassSpec) {
			s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"golden": "no"}}}
		}, wantError: awsv1.ConditionAMIsReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := defaultNodeClass()
			if tt.mutate != nil {
				tt.mutate(&nc.Spec)
			}
			r, err := e.p.Resolve(e.ctx, nc)
			if tt.wantError != "" {
				var re *ResolveError
				if !errors.As(err, &re) || re.Condition != tt.wantError {
					t.Fatalf("err = %v, want a ResolveError for %s", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
			var st awsv1.EC2NodeClassStatus
			r.ApplyTo(&st)
			if len(st.Subnets) != len(r.Subnets) || st.InstanceProfile != r.InstanceProfile {
				t.Errorf("ApplyTo wrote %+v", st)
			}
		})
	}
}
