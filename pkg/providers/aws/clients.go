package aws

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// EC2API is the part of the EC2 client the provider calls; *ec2.Client
// satisfies it. The caller builds the client (config.LoadDefaultConfig,
// BaseEndpoint for a simulated AWS) and chooses its retryer.
type EC2API interface {
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeImages(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	CreateLaunchTemplate(context.Context, *ec2.CreateLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DeleteLaunchTemplate(context.Context, *ec2.DeleteLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
	CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	CreateTags(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeCapacityReservations(context.Context, *ec2.DescribeCapacityReservationsInput, ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
}

// SSMAPI resolves AMI aliases through the public EKS and Bottlerocket parameters.
type SSMAPI interface {
	GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// IAMAPI manages the instance profile of a node class with spec.role and
// checks the one named by spec.instanceProfile; *iam.Client satisfies it.
type IAMAPI interface {
	GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	CreateInstanceProfile(context.Context, *iam.CreateInstanceProfileInput, ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error)
	AddRoleToInstanceProfile(context.Context, *iam.AddRoleToInstanceProfileInput, ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error)
	RemoveRoleFromInstanceProfile(context.Context, *iam.RemoveRoleFromInstanceProfileInput, ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error)
	TagInstanceProfile(context.Context, *iam.TagInstanceProfileInput, ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error)
	DeleteInstanceProfile(context.Context, *iam.DeleteInstanceProfileInput, ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error)
}

var (
	_ EC2API = (*ec2.Client)(nil)
	_ SSMAPI = (*ssm.Client)(nil)
	_ IAMAPI = (*iam.Client)(nil)
)

// Defaults of RetryOptions.
const (
	DefaultMaxAttempts    = 5
	DefaultMaxBackoff     = 5 * time.Second
	DefaultAttemptTimeout = 30 * time.Second
)

// RetryOptions shape how every AWS client the controller builds retries
// and times out. The retrying is the SDK's standard retryer, configured:
// throttling errors (RequestLimitExceeded, ThrottlingException, …), 5xx
// answers, timeouts and broken connections are retried with exponential
// backoff and full jitter (from 1 s for throttling, 50 ms otherwise, capped
// at MaxBackoff). The SDK's client-side retry quota is off: a burst of
// throttles from one API must not stop the retries of the others, and EC2
// rate-limits on its side anyway.
type RetryOptions struct {
	// MaxAttempts per call, the first included; default 5.
	MaxAttempts int
	// MaxBackoff caps the delay between two attempts; default 5 s.
	MaxBackoff time.Duration
	// AttemptTimeout bounds one attempt from connecting to the last byte of
	// the answer, so a call that hangs is retried like a 5xx instead of
	// holding a worker; default 30 s, above SQS's 20 s long poll.
	AttemptTimeout time.Duration
	// OnRetry, when set, is told about every retry the SDK makes: the
	// service and operation, and why (RetryReason).
	OnRetry func(service, operation, reason string)
}

func (o RetryOptions) withDefaults() RetryOptions {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	return o
}

// Retryer is aws.Config.Retryer for these options: one retryer per client.
func (o RetryOptions) Retryer() func() aws.Retryer {
	o = o.withDefaults()
	return func() aws.Retryer {
		std := retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = o.MaxAttempts
			so.MaxBackoff = o.MaxBackoff
			so.RateLimiter = ratelimit.None
		})
		if o.OnRetry == nil {
			return std
		}
		return &countingRetryer{RetryerV2: std, onRetry: o.OnRetry}
	}
}

// HTTPClient is aws.Config.HTTPClient for these options: the SDK's own
// client with the attempt timeout.
func (o RetryOptions) HTTPClient() aws.HTTPClient {
	return awshttp.NewBuildableClient().WithTimeout(o.withDefaults().AttemptTimeout)
}

// LoadOptions give every client built from the loaded configuration this
// retryer and attempt timeout.
func (o RetryOptions) LoadOptions() []func(*awsconfig.LoadOptions) error {
	return []func(*awsconfig.LoadOptions) error{awsconfig.WithRetryer(o.Retryer()), awsconfig.WithHTTPClient(o.HTTPClient())}
}

// NewRetryer is RetryOptions{MaxAttempts, MaxBackoff}.Retryer(), for
// callers that build aws.Config by hand (the simulator, tests).
func NewRetryer(maxAttempts int, maxBackoff time.Duration) func() aws.Retryer {
	return RetryOptions{MaxAttempts: maxAttempts, MaxBackoff: maxBackoff}.Retryer()
}

// countingRetryer is the standard retryer, told about each retry it grants.
// The retry middleware asks for a retry token exactly once before each
// retry, with the failed attempt's error and the operation's context.
type countingRetryer struct {
	aws.RetryerV2
	onRetry func(service, operation, reason string)
}

func (r *countingRetryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	release, err := r.RetryerV2.GetRetryToken(ctx, opErr)
	if err == nil {
		r.onRetry(awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), RetryReason(opErr))
	}
	return release, err
}

// Retry reasons for metrics.
const (
	RetryThrottled   = "throttled"
	RetryServerError = "server_error"
	RetryTimeout     = "timeout"
	RetryConnection  = "connection"
	RetryOther       = "other"
)

// RetryReason names why the SDK retries err: the SDK's own throttle
// classification first, then a timeout, a 5xx answer, a failed connection.
func RetryReason(err error) string {
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary {
		return RetryThrottled
	}
	var timeout interface{ Timeout() bool }
	if errors.As(err, &timeout) && timeout.Timeout() {
		return RetryTimeout
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() >= 500 {
		return RetryServerError
	}
	var conn interface{ ConnectionError() bool }
	if errors.As(err, &conn) && conn.ConnectionError() {
		return RetryConnection
	}
	return RetryOther
}

// NewClients builds the EC2, SSM and IAM clients from cfg; a non-empty
// endpoint points all three at a simulated AWS (fakeaws serves every service
// on one URL).
func NewClients(cfg aws.Config, endpoint string) (*ec2.Client, *ssm.Client, *iam.Client) {
	e := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	s := ssm.NewFromConfig(cfg, func(o *ssm.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	i := iam.NewFromConfig(cfg, func(o *iam.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	return e, s, i
}
