package fakeaws_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// TestInjectedFaultsSpeakEachServicesWire reads the fake's injected
// throttles and server errors with each service's SDK client, retries off:
// each must carry the code and HTTP status of the service's model, and the
// SDK's retryer must class the throttle as a throttle and the error as
// retryable.
func TestInjectedFaultsSpeakEachServicesWire(t *testing.T) {
	w := fakeaws.NewWorld(fakeaws.Options{ClusterName: cluster, InterruptionQueue: "interruptions", Seed: 1})
	srv := fakeaws.NewServer(w)
	url := srv.Start()
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} }}
	e, i, q, s, p := ec2.NewFromConfig(cfg), iam.NewFromConfig(cfg), sqs.NewFromConfig(cfg), ssm.NewFromConfig(cfg), pricing.NewFromConfig(cfg)
	ctx := context.Background()
	tests := []struct {
		key                      string
		call                     func() error
		throttleCode, errCode    string
		throttleStatus, errState int
	}{
		{"DescribeInstances", func() error { _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); return err },
			"RequestLimitExceeded", "InternalError", 503, 500},
		{"iam:GetInstanceProfile", func() error {
			_, err := i.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p")})
			return err
		}, "Throttling", "ServiceFailure", 400, 500},
		{"sqs:GetQueueUrl", func() error {
			_, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruptions")})
			return err
		}, "RequestThrottled", "InternalError", 403, 500},
		{"ssm:GetParameter", func() error {
			_, err := s.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/p")})
			return err
		}, "ThrottlingException", "InternalServerError", 400, 500},
		{"pricing:GetProducts", func() error {
			_, err := p.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2")})
			return err
		}, "ThrottlingException", "InternalErrorException", 429, 500},
	}
	isThrottle := retry.IsErrorThrottles(retry.DefaultThrottles)
	isRetryable := retry.IsErrorRetryables(retry.DefaultRetryables)
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			check := func(what, code string, status int, classed func(error) bool) {
				t.Helper()
				err := tt.call()
				var ae smithy.APIError
				var re *awshttp.ResponseError
				if !errors.As(err, &ae) || !errors.As(err, &re) {
					t.Fatalf("%s: %v, want an API error", what, err)
				}
				if ae.ErrorCode() != code || re.HTTPStatusCode() != status || !classed(err) {
					t.Errorf("%s: %s on HTTP %d (classed %v), want %s on HTTP %d", what, ae.ErrorCode(), re.HTTPStatusCode(), classed(err), code, status)
				}
			}
			w.InjectThrottle(tt.key, 1)
			check("throttle", tt.throttleCode, tt.throttleStatus, func(err error) bool { return isThrottle.IsErrorThrottle(err) == aws.TrueTernary })
			w.InjectServerError(tt.key, 1)
			check("server error", tt.errCode, tt.errState, func(err error) bool { return isRetryable.IsErrorRetryable(err) == aws.TrueTernary })
		})
	}
}
