package fakeaws_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// The in-process client gives the SDK the answers the loopback server
// gives: two worlds with the same seed, one reached over TCP and one in
// process, launch the same instances, answer the same errors and hand out
// queue URLs on the endpoint each client was given.
func TestInProcessClientAnswersAsLoopback(t *testing.T) {
	tcp := newEnv(t)
	inproc := newEnv(t)
	const endpoint = "http://aws.simulated.invalid"
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   inproc.srv.InProcess(),
		// No retries: an answer the client could not read must fail here.
		RetryMaxAttempts: 1,
	}
	inproc.ec2 = ec2.NewFromConfig(cfg)
	inproc.sqs = sqs.NewFromConfig(cfg)

	type result struct {
		instances []string
		errCode   string
		queueURL  string
		body      string
	}
	do := func(e *env) result {
		var r result
		// Thirty overrides make a request and an answer of several KiB.
		types := []string{"m5.large", "m5.xlarge", "c5.large", "c5.xlarge", "r5.large", "m6i.large", "c6i.large", "r6i.large", "m7i.large", "c7i.large"}
		out := e.fleet(t, e.launchTemplate(t, "inproc", "x86_64", ""), "spot", "price-capacity-optimized", 3, types...)
		for _, in := range out.Instances {
			r.instances = append(r.instances, in.InstanceIds...)
		}
		_, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"not-an-id"}})
		var ae smithy.APIError
		if errors.As(err, &ae) {
			r.errCode = ae.ErrorCode()
		}
		q, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("work")})
		if err != nil {
			t.Fatalf("CreateQueue: %v", err)
		}
		r.queueURL = aws.ToString(q.QueueUrl)
		if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		msgs, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
		if err != nil || len(msgs.Messages) != 1 {
			t.Fatalf("ReceiveMessage: %v, %d messages", err, len(msgs.Messages))
		}
		r.body = aws.ToString(msgs.Messages[0].Body)
		return r
	}
	a, b := do(tcp), do(inproc)
	if len(a.instances) != 3 || strings.Join(a.instances, ",") != strings.Join(b.instances, ",") {
		t.Errorf("instances over TCP %v, in process %v; want the same three", a.instances, b.instances)
	}
	if a.errCode == "" || a.errCode != b.errCode {
		t.Errorf("error code over TCP %q, in process %q; want the same", a.errCode, b.errCode)
	}
	if want := endpoint + "/" + strings.SplitN(strings.TrimPrefix(a.queueURL, tcp.srv.URL()+"/"), "/", 2)[0] + "/work"; b.queueURL != want {
		t.Errorf("queue URL in process = %q, want %q (over TCP %q)", b.queueURL, want, a.queueURL)
	}
	if a.body != "hello" || b.body != "hello" {
		t.Errorf("message bodies %q and %q, want hello", a.body, b.body)
	}
}

// A body the transport cannot read fails the call, as it would over TCP,
// without reaching the handler.
func TestInProcessClientRequestBodyError(t *testing.T) {
	e := newEnv(t)
	req, err := httpRequest(e.srv.URL(), errReader{})
	if err != nil {
		t.Fatal(err)
	}
	before := e.world.Stats()["sqs:ListQueues"]
	if _, err := e.srv.InProcess().Do(req); err == nil || !strings.Contains(err.Error(), "reading the request body") {
		t.Errorf("Do with an unreadable body = %v, want a body error", err)
	}
	if after := e.world.Stats()["sqs:ListQueues"]; after != before {
		t.Errorf("the handler ran: ListQueues counted %d, then %d", before, after)
	}
}

var _ aws.HTTPClient = (*fakeaws.InProcessClient)(nil)

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// httpRequest is an SQS ListQueues call whose body reads from body.
func httpRequest(url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	return req, nil
}
