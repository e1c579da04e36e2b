package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/smithy-go"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// TestPolicyFromTerraform serves the example policy: reads in the region
// pass, a call the policy does not grant is refused the way EC2 refuses it.
func TestPolicyFromTerraform(t *testing.T) {
	var out bytes.Buffer
	world, ln, rc, err := setup([]string{"--listen", "127.0.0.1:0", "--catalog=false", "--cluster-name", "demo",
		"--policy-from-terraform", filepath.Join("..", "..", "examples", "terraform")}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rc.policy == nil || !strings.Contains(out.String(), "IAM policy enforced") {
		t.Fatalf("no policy loaded; banner:\n%s", out.String())
	}
	h := fakeaws.NewServer(world)
	h.EnforcePolicy(rc.policy, "")
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String("http://" + ln.Addr().String()), RetryMaxAttempts: 1}
	ctx := context.Background()
	if _, err := ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("DescribeSubnets is granted: %v", err)
	}
	_, err = ec2.NewFromConfig(cfg).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnauthorizedOperation" || !strings.Contains(ae.ErrorMessage(), "ec2:DescribeVpcs") ||
		!strings.Contains(ae.ErrorMessage(), "Encoded authorization failure message") {
		t.Fatalf("DescribeVpcs is not granted: %v", err)
	}
	if _, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("demo")}); err != nil {
		t.Fatalf("DescribeCluster of the cluster is granted: %v", err)
	}
	_, err = eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("other")})
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDeniedException" {
		t.Fatalf("DescribeCluster of another cluster: %v, want AccessDeniedException", err)
	}
}

func TestMarketFlag(t *testing.T) {
	plain, ln1, _, err := setup([]string{"--listen", "127.0.0.1:0", "--seed", "3"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	_ = ln1.Close()
	drifted, ln2, _, err := setup([]string{"--listen", "127.0.0.1:0", "--seed", "3", "--market", "drifted"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	_ = ln2.Close()
	price := map[fakeaws.PoolKey]float64{}
	for _, p := range plain.Pools() {
		price[p.PoolKey] = p.Price
	}
	var gone, moved int
	seen := map[fakeaws.PoolKey]bool{}
	for _, p := range drifted.Pools() {
		seen[p.PoolKey] = true
		if old, ok := price[p.PoolKey]; ok && old != p.Price {
			moved++
		}
	}
	for k := range price {
		if !seen[k] {
			gone++
		}
	}
	if gone == 0 || moved == 0 {
		t.Fatalf("--market drifted withdrew %d pools and repriced %d of the snapshot's; want some of each", gone, moved)
	}
	if _, _, _, err := setup([]string{"--listen", "127.0.0.1:0", "--market", "live"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--market") {
		t.Fatalf("an unknown market: %v", err)
	}
}
