package e2e

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

// wireCalls are, per API, one call the controller makes, through the AWS
// SDK's own client for that API with retries off.
func wireCalls() map[string]func(context.Context) error {
	cfg := aws.Config{Region: labRegion, BaseEndpoint: aws.String(lab.AWSURL),
		Credentials: credentials.NewStaticCredentialsProvider("lab", "lab", ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} }}
	e, i, q, s, p, k := ec2.NewFromConfig(cfg), iam.NewFromConfig(cfg), sqs.NewFromConfig(cfg), ssm.NewFromConfig(cfg), pricing.NewFromConfig(cfg), eks.NewFromConfig(cfg)
	return map[string]func(context.Context) error{
		apiEC2: func(c context.Context) error {
			_, err := e.DescribeInstances(c, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
			return err
		},
		apiIAM: func(c context.Context) error {
			_, err := i.GetInstanceProfile(c, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("lab-wire-check")})
			return err
		},
		apiSQS: func(c context.Context) error {
			_, err := q.GetQueueUrl(c, &sqs.GetQueueUrlInput{QueueName: aws.String(labInterruptionQueue)})
			return err
		},
		apiSSM: func(c context.Context) error {
			_, err := s.GetParameter(c, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.0/amazon-linux-2023/x86_64/standard/recommended/image_id")})
			return err
		},
		apiPricing: func(c context.Context) error {
			_, err := p.GetProducts(c, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1)})
			return err
		},
		apiEKS: func(c context.Context) error {
			_, err := k.DescribeCluster(c, &eks.DescribeClusterInput{Name: aws.String(labCluster)})
			return err
		},
	}
}

// checkAllFaultsOnTheWire reads the injector's answers for every API with
// that API's own SDK client (no retries): an injected throttle must come
// back as the service's throttling code on its status and be what the
// SDK's retryer classes as a throttle; an injected failure as the service's
// 5xx code, retryable. Anything else the call answers (the fake's own
// answer, say NoSuchEntity for a profile that does not exist) is not
// injected. The shares of each must be within four standard deviations of
// the configured ones over calls calls.
func checkAllFaultsOnTheWire(t *testing.T, share, errShare float64) {
	t.Helper()
	const calls = 150
	isThrottle := retry.IsErrorThrottles(retry.DefaultThrottles)
	isRetryable := retry.IsErrorRetryables(retry.DefaultRetryables)
	within := func(n int, p float64) bool {
		mean, sd := calls*p, math.Sqrt(calls*p*(1-p))
		return math.Abs(float64(n)-mean) <= 4*sd
	}
	fns := wireCalls()
	for _, api := range faultAPIs {
		th, fl := injectedFault(api, true), injectedFault(api, false)
		throttles, errs := 0, 0
		for range calls {
			err := fns[api](ctx())
			var ae smithy.APIError
			var re *awshttp.ResponseError
			if err == nil || !errors.As(err, &ae) || (ae.ErrorCode() != th.code && ae.ErrorCode() != fl.code) {
				continue // the fake's own answer
			}
			if !errors.As(err, &re) {
				t.Fatalf("%s: an injected fault without its HTTP response: %v", api, err)
			}
			switch {
			case ae.ErrorCode() == th.code && re.HTTPStatusCode() == th.status && isThrottle.IsErrorThrottle(err) == aws.TrueTernary:
				throttles++
			case ae.ErrorCode() == fl.code && re.HTTPStatusCode() == fl.status && isRetryable.IsErrorRetryable(err) == aws.TrueTernary:
				errs++
			default:
				t.Fatalf("%s: an injected fault the SDK reads as %q on HTTP %d (throttle %v, retryable %v): %v",
					api, ae.ErrorCode(), re.HTTPStatusCode(), isThrottle.IsErrorThrottle(err), isRetryable.IsErrorRetryable(err), err)
			}
		}
		if !within(throttles, share) || !within(errs, (1-share)*errShare) {
			t.Errorf("%s: %d throttles and %d errors in %d calls; want shares %.2f and %.3f", api, throttles, errs, calls, share, (1-share)*errShare)
		}
		t.Logf("fault injector read by the SDK's %s client: %d of %d calls %s (HTTP %d, a throttle to the retryer), %d %s (HTTP %d, retryable)",
			api, throttles, calls, th.code, th.status, errs, fl.code, fl.status)
	}
}
