package aws

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// retryLog records OnRetry calls.
type retryLog struct {
	mu  sync.Mutex
	got map[[3]string]int
}

func (r *retryLog) on(service, op, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[[3]string]int{}
	}
	r.got[[3]string{service, op, reason}]++
}

func (r *retryLog) count(service, op, reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[[3]string{service, op, reason}]
}

// loaded is an aws.Config as cmd/controller loads it, aimed at url.
func loaded(t *testing.T, o RetryOptions, url string) aws.Config {
	t.Helper()
	opts := append(o.LoadOptions(), awsconfig.WithRegion("us-east-1"),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", "")),
		awsconfig.WithBaseEndpoint(url))
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestEveryClientOfTheConfigRetriesAndCounts(t *testing.T) {
	w := fakeaws.NewWorld(fakeaws.Options{ClusterName: testCluster, Seed: 1})
	srv := httptest.NewServer(fakeaws.NewServer(w))
	t.Cleanup(srv.Close)
	log := &retryLog{}
	cfg := loaded(t, RetryOptions{MaxAttempts: 4, MaxBackoff: 5 * time.Millisecond, OnRetry: log.on}, srv.URL)
	ctx := context.Background()
	w.CreateQueue("q", nil)

	w.InjectThrottle("DescribeSubnets", 2)
	if _, err := ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("EC2 after 2 throttles: %v", err)
	}
	w.InjectServerError("sqs:GetQueueUrl", 1)
	if _, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("q")}); err != nil {
		t.Fatalf("SQS after a 5xx: %v", err)
	}
	w.InjectThrottle("ssm:GetParameter", 1)
	_, _ = ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/nope")})

	for _, want := range []struct {
		service, op, reason string
		n                   int
	}{
		{"EC2", "DescribeSubnets", RetryThrottled, 2},
		{"SQS", "GetQueueUrl", RetryServerError, 1},
		{"SSM", "GetParameter", RetryThrottled, 1},
	} {
		if got := log.count(want.service, want.op, want.reason); got != want.n {
			t.Errorf("retries of %s %s for %s = %d, want %d (all: %v)", want.service, want.op, want.reason, got, want.n, log.got)
		}
	}
	if got := w.Stats()["DescribeSubnets"]; got != 3 {
		t.Errorf("DescribeSubnets on the wire = %d, want 3", got)
	}
	// A permanent error is not retried.
	if got := log.count("SSM", "GetParameter", RetryOther); got != 0 {
		t.Errorf("ParameterNotFound was retried %d times", got)
	}
}

func TestHungAttemptTimesOutAndIsRetried(t *testing.T) {
	w := fakeaws.NewWorld(fakeaws.Options{ClusterName: testCluster, Seed: 1})
	var hang atomic.Int32
	hang.Store(2)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if hang.Add(-1) >= 0 {
			select { // a call that never answers, until the client gives up
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		fakeaws.NewServer(w).ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: the hung handlers return
	log := &retryLog{}
	cfg := loaded(t, RetryOptions{MaxAttempts: 3, MaxBackoff: 5 * time.Millisecond, AttemptTimeout: 100 * time.Millisecond, OnRetry: log.on}, srv.URL)
	// Without the attempt timeout the first attempt never returns (the
	// handler waits for the test's cleanup), so reaching the check is the proof.
	if _, err := ec2.NewFromConfig(cfg).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("after two hung attempts: %v", err)
	}
	if got := log.count("EC2", "DescribeSubnets", RetryTimeout); got != 2 {
		t.Errorf("timeouts retried = %d, want 2 (%v)", got, log.got)
	}

	// Hung through every attempt: an error the provider reads as "no answer".
	hang.Store(3)
	_, err := ec2.NewFromConfig(cfg).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	if err == nil || !isTransient(err) {
		t.Fatalf("every attempt hung: %v, want a transient error", err)
	}
}

// The backoff is the SDK's: exponential with full jitter, capped.
func TestRetryerBackoffIsJitteredAndCapped(t *testing.T) {
	r := RetryOptions{MaxAttempts: 5, MaxBackoff: 5 * time.Second}.Retryer()()
	throttle := &smithy.GenericAPIError{Code: "RequestLimitExceeded", Message: "slow down"}
	server := &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 500}}, Err: errors.New("oops")}
	if !r.IsErrorRetryable(throttle) || !r.IsErrorRetryable(server) {
		t.Fatal("throttling and server errors must be retryable")
	}
	if r.IsErrorRetryable(&smithy.GenericAPIError{Code: "InvalidParameterValue"}) {
		t.Error("a client error must not be retried")
	}
	if r.MaxAttempts() != 5 {
		t.Errorf("MaxAttempts = %d", r.MaxAttempts())
	}
	for attempt := 1; attempt <= 6; attempt++ {
		bound := min(5*time.Second, time.Second<<(attempt-1)) // throttles start at 1 s
		seen := map[time.Duration]bool{}
		for range 50 {
			d, err := r.RetryDelay(attempt, throttle)
			if err != nil {
				t.Fatal(err)
			}
			if d < 0 || d > bound {
				t.Fatalf("attempt %d: delay %s outside [0, %s]", attempt, d, bound)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("attempt %d: only %d distinct delays in 50: no jitter", attempt, len(seen))
		}
	}
}

func TestRetryReason(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"EC2 throttling", &smithy.GenericAPIError{Code: "RequestLimitExceeded"}, RetryThrottled},
		{"SQS throttling", &smithy.GenericAPIError{Code: "RequestThrottled"}, RetryThrottled},
		{"a timeout", &timeoutErr{}, RetryTimeout},
		{"a refused connection", &retry.MaxAttemptsError{Err: &connErr{}}, RetryConnection},
		{"anything else", errors.New("odd"), RetryOther},
	}
	for _, tt := range tests {
		if got := RetryReason(tt.err); got != tt.want {
			t.Errorf("%s: RetryReason = %s, want %s", tt.name, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

type connErr struct{}

func (connErr) Error() string         { return "connection refused" }
func (connErr) ConnectionError() bool { return true }
