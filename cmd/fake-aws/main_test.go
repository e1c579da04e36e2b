package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func TestSetupServesTheConfiguredWorld(t *testing.T) {
	var out bytes.Buffer
	world, ln, rc, err := setup([]string{"--listen", "127.0.0.1:0", "--zones", "us-west-2a,us-west-2b", "--region", "us-west-2",
		"--cluster-name", "demo", "--interruption-queue", "demo-q", "--capacity", "7", "--catalog=false", "--interrupt-every", "3m", "--roles", "demo-nodes, other"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rc.interruptEvery != 3*time.Minute {
		t.Fatalf("interrupt-every %v", rc.interruptEvery)
	}
	srv := &http.Server{Handler: fakeaws.NewServer(world)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	endpoint := "http://" + ln.Addr().String()
	if !strings.Contains(out.String(), "export AWS_ENDPOINT_URL="+endpoint) {
		t.Fatalf("banner does not print the endpoint:\n%s", out.String())
	}
	cfg := aws.Config{Region: "us-west-2", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(endpoint)}
	ctx := context.Background()
	subnets, err := ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:nodesmith.sh/discovery"), Values: []string{"demo"}}}})
	if err != nil || len(subnets.Subnets) != 2 || aws.ToString(subnets.Subnets[0].AvailabilityZoneId) != "usw2-az1" {
		t.Fatalf("subnets: %v %+v", err, subnets)
	}
	if _, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("demo-q")}); err != nil {
		t.Fatalf("interruption queue: %v", err)
	}
	// The configured role exists: a profile can take it, an unknown role cannot.
	iamc := iam.NewFromConfig(cfg)
	if _, err := iamc.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p")}); err != nil {
		t.Fatal(err)
	}
	if _, err := iamc.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String("demo-nodes")}); err != nil {
		t.Fatalf("the --roles role should exist: %v", err)
	}
	if _, err := iamc.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("q")}); err != nil {
		t.Fatal(err)
	}
	_, err = iamc.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("q"), RoleName: aws.String("missing")})
	if err == nil || !strings.Contains(err.Error(), "NoSuchEntity") {
		t.Fatalf("a role not in --roles should not exist, got %v", err)
	}
	if !strings.Contains(out.String(), "IAM roles: demo-nodes, other") {
		t.Fatalf("banner does not list the roles:\n%s", out.String())
	}
	for _, p := range world.Pools() {
		if p.Spare != 7 {
			t.Fatalf("pool %+v, want capacity 7", p)
		}
	}
}

func TestSetupRejectsBadFlags(t *testing.T) {
	if _, _, _, err := setup([]string{"--boot-delay", "soon"}, &bytes.Buffer{}); err == nil {
		t.Fatal("a bad duration should fail")
	}
}
