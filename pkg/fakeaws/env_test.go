package fakeaws_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

const cluster = "lab"

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// env is one world behind a loopback server with the three real SDK clients.
type env struct {
	clock *clocktesting.FakeClock
	world *fakeaws.World
	srv   *fakeaws.Server
	ec2   *ec2.Client
	sqs   *sqs.Client
	ssm   *ssm.Client
	ctx   context.Context
}

func newEnv(t testing.TB, mutate ...func(*fakeaws.Options)) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	o := fakeaws.Options{Clock: clk, ClusterName: cluster, InterruptionQueue: "interruptions", Seed: 1}
	for _, m := range mutate {
		m(&o)
	}
	w := fakeaws.NewWorld(o)
	srv := fakeaws.NewServer(w)
	url := srv.Start()
	t.Cleanup(srv.Close)
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
		// The standard retryer with its real classification, five attempts and
		// a millisecond backoff, so retry tests are quick.
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 5
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			})
		},
	}
	return &env{
		clock: clk, world: w, srv: srv, ctx: context.Background(),
		ec2: ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) }),
		sqs: sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) }),
		ssm: ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.BaseEndpoint = aws.String(url) }),
	}
}

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

// launchTemplate creates a template with the cluster's SG and the AL2023 image of arch.
func (e *env) launchTemplate(t testing.TB, name, arch, userData string) string {
	t.Helper()
	img := e.image(t, "amazon-eks-node-al2023-"+arch+"-standard-1.37-*")
	sgs, err := e.ec2.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("tag:nodesmith.sh/discovery", cluster)}})
	if err != nil || len(sgs.SecurityGroups) != 1 {
		t.Fatalf("security groups: %v %d", err, len(sgs.SecurityGroups))
	}
	out, err := e.ec2.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:          aws.String(img),
			UserData:         aws.String(b64(userData)),
			SecurityGroupIds: []string{*sgs.SecurityGroups[0].GroupId},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{
				ResourceType: ec2types.ResourceTypeInstance,
				Tags:         []ec2types.Tag{{Key: aws.String("nodesmith.sh/cluster"), Value: aws.String(cluster)}},
			}},
		},
	})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	return *out.LaunchTemplate.LaunchTemplateId
}

func (e *env) image(t testing.TB, namePattern string) string {
	t.Helper()
	out, err := e.ec2.DescribeImages(e.ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("name", namePattern)}})
	if err != nil || len(out.Images) != 1 {
		t.Fatalf("DescribeImages %s: %v (%d images)", namePattern, err, len(out.Images))
	}
	return *out.Images[0].ImageId
}

// subnets returns the cluster's subnet id per zone.
func (e *env) subnets(t testing.TB) map[string]string {
	t.Helper()
	out, err := e.ec2.DescribeSubnets(e.ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:nodesmith.sh/discovery", cluster)}})
	if err != nil {
		t.Fatalf("DescribeSubnets: %v", err)
	}
	m := map[string]string{}
	for _, s := range out.Subnets {
		m[*s.AvailabilityZone] = *s.SubnetId
	}
	return m
}

// fleet launches n instances of the given types over every cluster subnet.
func (e *env) fleet(t testing.TB, lt, capacityType, strategy string, n int, types ...string) *ec2.CreateFleetOutput {
	t.Helper()
	out, err := e.ec2.CreateFleet(e.ctx, e.fleetInput(t, lt, capacityType, strategy, n, types...))
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	return out
}

// fleetInput is the instant CreateFleet request fleet sends.
func (e *env) fleetInput(t testing.TB, lt, capacityType, strategy string, n int, types ...string) *ec2.CreateFleetInput {
	t.Helper()
	var ovs []ec2types.FleetLaunchTemplateOverridesRequest
	for _, it := range types {
		for _, sn := range sortedValues(e.subnets(t)) {
			ovs = append(ovs, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(it), SubnetId: aws.String(sn)})
		}
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   ovs,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(int32(n)),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
	}
	if capacityType == "spot" {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategy(strategy)}
	} else if strategy != "" {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategy(strategy)}
	}
	return in
}
