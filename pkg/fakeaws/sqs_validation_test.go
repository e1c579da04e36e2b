package fakeaws_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func createQueue(t *testing.T, e *env, name string, attrs map[string]string) string {
	t.Helper()
	out, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

func queueAttrs(t *testing.T, e *env, url string) map[string]string {
	t.Helper()
	out, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	return out.Attributes
}

func counts(t *testing.T, e *env, url string) string {
	t.Helper()
	a := queueAttrs(t, e, url)
	return fmt.Sprintf("visible=%s notVisible=%s delayed=%s", a["ApproximateNumberOfMessages"],
		a["ApproximateNumberOfMessagesNotVisible"], a["ApproximateNumberOfMessagesDelayed"])
}

func TestSQSQueueNames(t *testing.T) {
	tests := []struct{ name, code string }{
		{"a", ""},
		{strings.Repeat("q", 80), ""},
		{"Work_queue-1", ""},
		{strings.Repeat("q", 81), "InvalidParameterValue"},
		{"has space", "InvalidParameterValue"},
		{"dots.are.not.allowed", "InvalidParameterValue"},
		{"ünï", "InvalidParameterValue"},
		{"", "MissingParameter"},
		{"jobs.fifo", "AWS.SimpleQueueService.UnsupportedOperation"}, // FIFO is refused by name, not simulated
		// A FIFO name is still checked as a name first: the suffix counts
		// toward the 80 characters and the rest follows the usual rules.
		{strings.Repeat("q", 75) + ".fifo", "AWS.SimpleQueueService.UnsupportedOperation"},
		{strings.Repeat("q", 76) + ".fifo", "InvalidParameterValue"},
		{"has space.fifo", "InvalidParameterValue"},
		{"a.b.fifo", "InvalidParameterValue"},
		{".fifo", "InvalidParameterValue"},
	}
	e := newEnv(t)
	for _, tt := range tests {
		_, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String(tt.name)})
		if apiCode(err) != tt.code {
			t.Errorf("CreateQueue %q: %v, want %q", tt.name, err, tt.code)
		}
	}
}

func TestSQSQueueAttributeValidation(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "attrs", nil)
	tests := []struct {
		name  string
		attrs map[string]string
		code  string
	}{
		{"visibility 12h", map[string]string{"VisibilityTimeout": "43200"}, ""},
		{"visibility over 12h", map[string]string{"VisibilityTimeout": "43201"}, "InvalidAttributeValue"},
		{"visibility not a number", map[string]string{"VisibilityTimeout": "soon"}, "InvalidAttributeValue"},
		{"delay 15m", map[string]string{"DelaySeconds": "900"}, ""},
		{"delay over 15m", map[string]string{"DelaySeconds": "901"}, "InvalidAttributeValue"},
		{"message size 1 KiB", map[string]string{"MaximumMessageSize": "1024"}, ""},
		{"message size under 1 KiB", map[string]string{"MaximumMessageSize": "1023"}, "InvalidAttributeValue"},
		{"message size over 1 MiB", map[string]string{"MaximumMessageSize": "1048577"}, "InvalidAttributeValue"},
		{"retention 1m", map[string]string{"MessageRetentionPeriod": "60"}, ""},
		{"retention under 1m", map[string]string{"MessageRetentionPeriod": "59"}, "InvalidAttributeValue"},
		{"retention over 14d", map[string]string{"MessageRetentionPeriod": "1209601"}, "InvalidAttributeValue"},
		{"wait 21s", map[string]string{"ReceiveMessageWaitTimeSeconds": "21"}, "InvalidAttributeValue"},
		{"unknown attribute", map[string]string{"Colour": "blue"}, "InvalidAttributeName"},
		{"read-only attribute", map[string]string{"QueueArn": "arn:aws:sqs:us-east-1:123456789012:x"}, "InvalidAttributeName"},
		{"policy not JSON", map[string]string{"Policy": "allow all"}, "InvalidAttributeValue"},
		{"redrive to a queue that does not exist", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:nope","maxReceiveCount":3}`}, "InvalidAttributeValue"},
		{"redrive count 0", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:interruptions","maxReceiveCount":0}`}, "InvalidAttributeValue"},
		{"redrive to an existing queue", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:interruptions","maxReceiveCount":"5"}`}, ""},
		{"sse flag", map[string]string{"SqsManagedSseEnabled": "maybe"}, "InvalidAttributeValue"},
	}
	for _, tt := range tests {
		_, err := e.sqs.SetQueueAttributes(e.ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: tt.attrs})
		if apiCode(err) != tt.code {
			t.Errorf("SetQueueAttributes %s: %v, want %q", tt.name, err, tt.code)
		}
		_, err = e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("fresh"), Attributes: tt.attrs})
		if tt.code != "" && apiCode(err) != tt.code {
			t.Errorf("CreateQueue %s: %v, want %q", tt.name, err, tt.code)
		}
		if err == nil {
			if _, err := e.sqs.DeleteQueue(e.ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(e.srv.QueueURL("fresh"))}); err != nil {
				t.Fatal(err)
			}
			e.clock.Step(61 * time.Second)
		}
	}
	if _, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"Colour"}}); apiCode(err) != "InvalidAttributeName" {
		t.Errorf("GetQueueAttributes of an unknown name: %v", err)
	}
	// Without names SQS answers no attributes at all.
	if out, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url)}); err != nil || len(out.Attributes) != 0 {
		t.Errorf("GetQueueAttributes without names: %v %v", err, out.Attributes)
	}
}

func TestSQSCreateExistingQueue(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "jobs", map[string]string{"VisibilityTimeout": "60"})
	if again := createQueue(t, e, "jobs", map[string]string{"VisibilityTimeout": "60"}); again != url {
		t.Fatalf("same attributes: url %s, want %s", again, url)
	}
	if again := createQueue(t, e, "jobs", nil); again != url {
		t.Fatalf("no attributes: url %s, want %s", again, url)
	}
	_, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs"), Attributes: map[string]string{"VisibilityTimeout": "61"}})
	var exists *sqstypes.QueueNameExists
	if apiCode(err) != "QueueAlreadyExists" || !asErr(err, &exists) {
		t.Fatalf("different attributes: %v, want QueueAlreadyExists", err)
	}
	if got := queueAttrs(t, e, url)["VisibilityTimeout"]; got != "60" {
		t.Fatalf("the refused CreateQueue changed the queue: VisibilityTimeout %s", got)
	}
	if _, err := e.sqs.DeleteQueue(e.ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sqs.GetQueueUrl(e.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs")}); apiCode(err) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("deleted queue: %v", err)
	}
	if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); apiCode(err) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("send to a deleted queue: %v", err)
	}
	if _, err := e.sqs.DeleteQueue(e.ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); apiCode(err) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("second DeleteQueue: %v", err)
	}
	if _, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")}); apiCode(err) != "AWS.SimpleQueueService.QueueDeletedRecently" {
		t.Fatalf("recreate within a minute: %v", err)
	}
	e.clock.Step(61 * time.Second)
	createQueue(t, e, "jobs", nil)
}

func TestSQSMessageValidation(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "msgs", nil)
	small := createQueue(t, e, "small", map[string]string{"MaximumMessageSize": "1024"})
	str := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	attrs := func(n int) map[string]sqstypes.MessageAttributeValue {
		m := map[string]sqstypes.MessageAttributeValue{}
		for i := 0; i < n; i++ {
			m[fmt.Sprintf("a%d", i)] = str("v")
		}
		return m
	}
	one := func(name string, v sqstypes.MessageAttributeValue) map[string]sqstypes.MessageAttributeValue {
		return map[string]sqstypes.MessageAttributeValue{name: v}
	}
	num := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(v)}
	}
	tests := []struct {
		name  string
		queue string
		body  string
		attrs map[string]sqstypes.MessageAttributeValue
		delay *int32
		code  string
	}{
		{name: "1 MiB body", body: strings.Repeat("b", 1<<20)},
		{name: "1 MiB and a byte", body: strings.Repeat("b", 1<<20+1), code: "InvalidParameterValue"},
		{name: "attributes count toward the size", body: strings.Repeat("b", 1<<20-10), attrs: one("n", str("0123456789")), code: "InvalidParameterValue"},
		{name: "queue's MaximumMessageSize", queue: small, body: strings.Repeat("b", 1025), code: "InvalidParameterValue"},
		{name: "empty body", body: "", code: "MissingParameter"},
		{name: "U+0001 in the body", body: "a\x01b", code: "InvalidMessageContents"},
		{name: "U+FFFE in the body", body: "a\uFFFEb", code: "InvalidMessageContents"},
		{name: "tab, newline, CR and astral plane", body: "a\tb\nc\rd 🚀"},
		{name: "ten attributes", body: "x", attrs: attrs(10)},
		{name: "eleven attributes", body: "x", attrs: attrs(11), code: "InvalidParameterValue"},
		{name: "legal name", body: "x", attrs: one("Foo_Bar-1.2", str("v"))},
		{name: "AWS. prefix", body: "x", attrs: one("AWS.trace", str("v")), code: "InvalidParameterValue"},
		{name: "amazon. prefix in any case", body: "x", attrs: one("aMaZoN.trace", str("v")), code: "InvalidParameterValue"},
		{name: "AWS without the period is fine", body: "x", attrs: one("AWSfoo", str("v"))},
		{name: "leading period", body: "x", attrs: one(".trace", str("v")), code: "InvalidParameterValue"},
		{name: "trailing period", body: "x", attrs: one("trace.", str("v")), code: "InvalidParameterValue"},
		{name: "successive periods", body: "x", attrs: one("a..b", str("v")), code: "InvalidParameterValue"},
		{name: "space in name", body: "x", attrs: one("a b", str("v")), code: "InvalidParameterValue"},
		{name: "256-byte name", body: "x", attrs: one(strings.Repeat("a", 256), str("v")), code: "InvalidParameterValue"},
		{name: "custom type label", body: "x", attrs: one("j", sqstypes.MessageAttributeValue{DataType: aws.String("String.json"), StringValue: aws.String("{}")})},
		{name: "unknown type", body: "x", attrs: one("j", sqstypes.MessageAttributeValue{DataType: aws.String("Str"), StringValue: aws.String("v")}), code: "InvalidParameterValue"},
		{name: "lower-case type", body: "x", attrs: one("j", sqstypes.MessageAttributeValue{DataType: aws.String("string"), StringValue: aws.String("v")}), code: "InvalidParameterValue"},
		{name: "empty string value", body: "x", attrs: one("j", str("")), code: "InvalidParameterValue"},
		{name: "control character in a string value", body: "x", attrs: one("j", str("a\x02")), code: "InvalidMessageContents"},
		{name: "binary", body: "x", attrs: one("b", sqstypes.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte{0, 1}})},
		{name: "number", body: "x", attrs: one("n", num("-12.50e3"))},
		{name: "number zero", body: "x", attrs: one("n", num("0"))},
		{name: "number 1e126", body: "x", attrs: one("n", num("1e126"))},
		{name: "number 1e127", body: "x", attrs: one("n", num("1e127")), code: "InvalidParameterValue"},
		{name: "number 1e-129", body: "x", attrs: one("n", num("1e-129")), code: "InvalidParameterValue"},
		{name: "number of 39 digits", body: "x", attrs: one("n", num(strings.Repeat("9", 39))), code: "InvalidParameterValue"},
		{name: "not a number", body: "x", attrs: one("n", num("twelve")), code: "InvalidParameterValue"},
		{name: "delay 15m", body: "x", delay: aws.Int32(900)},
		{name: "delay over 15m", body: "x", delay: aws.Int32(901), code: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		q := url
		if tt.queue != "" {
			q = tt.queue
		}
		in := &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String(tt.body), MessageAttributes: tt.attrs}
		if tt.delay != nil {
			in.DelaySeconds = *tt.delay
		}
		if _, err := e.sqs.SendMessage(e.ctx, in); apiCode(err) != tt.code {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.code)
		}
	}
}

func TestSQSBatchLimits(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "batch", nil)
	entry := func(id string, size int) sqstypes.SendMessageBatchRequestEntry {
		return sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(strings.Repeat("b", size))}
	}
	_, err := e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url),
		Entries: []sqstypes.SendMessageBatchRequestEntry{entry("a", 600<<10), entry("b", 600<<10)}})
	if apiCode(err) != "AWS.SimpleQueueService.BatchRequestTooLong" {
		t.Fatalf("1.2 MiB batch: %v", err)
	}
	if vis, _ := e.world.QueueDepth("batch"); vis != 0 {
		t.Fatalf("a refused batch sent %d messages", vis)
	}
	_, err = e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url),
		Entries: []sqstypes.SendMessageBatchRequestEntry{entry("has space", 1)}})
	if apiCode(err) != "AWS.SimpleQueueService.InvalidBatchEntryId" {
		t.Fatalf("bad entry id: %v", err)
	}
	out, err := e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url),
		Entries: []sqstypes.SendMessageBatchRequestEntry{entry("ok", 3), {Id: aws.String("bad"), MessageBody: aws.String("\x00")}}})
	if err != nil || len(out.Successful) != 1 || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Code) != "InvalidMessageContents" || !out.Failed[0].SenderFault {
		t.Fatalf("mixed batch: %v %+v", err, out)
	}
}

func TestSQSDelayedMessagesAreDelayedNotInFlight(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "later", nil)
	if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), DelaySeconds: 30}); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, e, url); got != "visible=0 notVisible=0 delayed=1" {
		t.Fatalf("after a delayed send: %s", got)
	}
	if got := receive(t, e, url, 10, 0); len(got) != 0 {
		t.Fatalf("a delayed message was delivered: %+v", got)
	}
	e.clock.Step(31 * time.Second)
	if got := counts(t, e, url); got != "visible=1 notVisible=0 delayed=0" {
		t.Fatalf("after the delay: %s", got)
	}
	receive(t, e, url, 10, 0)
	if got := counts(t, e, url); got != "visible=0 notVisible=1 delayed=0" {
		t.Fatalf("after the receive: %s", got)
	}
	// A queue-level delay applies when the message names none, and an
	// explicit zero overrides it. The Go SDK leaves a zero DelaySeconds out,
	// so the explicit zero goes over the wire directly.
	slow := createQueue(t, e, "slow", map[string]string{"DelaySeconds": "60"})
	if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(slow), MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	if status, b := rawSQS(t, e, "SendMessage", `{"QueueUrl":"`+slow+`","MessageBody":"y","DelaySeconds":0}`); status != 200 {
		t.Fatalf("explicit zero delay: %d %s", status, b)
	}
	if got := counts(t, e, slow); got != "visible=1 notVisible=0 delayed=1" {
		t.Fatalf("queue delay: %s", got)
	}
}

// rawSQS posts one AWS JSON 1.0 request and returns the status and body.
func rawSQS(t *testing.T, e *env, op, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL(), bytes.NewBufferString(body))
	req.Header.Set("X-Amz-Target", "AmazonSQS."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestSQSRetentionExpiresMessages(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "short", map[string]string{"MessageRetentionPeriod": "60"})
	for _, b := range []string{"a", "b"} {
		if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, e, url, 1, 120) // one in flight: it expires all the same
	e.clock.Step(59 * time.Second)
	if got := counts(t, e, url); got != "visible=1 notVisible=1 delayed=0" {
		t.Fatalf("before retention ends: %s", got)
	}
	e.clock.Step(time.Second)
	if got := counts(t, e, url); got != "visible=0 notVisible=0 delayed=0" {
		t.Fatalf("after retention: %s", got)
	}
	if v, f := e.world.QueueDepth("short"); v+f != 0 {
		t.Fatalf("QueueDepth %d/%d after retention", v, f)
	}
}

func TestSQSPurgeOncePerMinute(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "purge", nil)
	if _, err := e.sqs.PurgeQueue(e.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(59 * time.Second)
	_, err := e.sqs.PurgeQueue(e.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	var inProgress *sqstypes.PurgeQueueInProgress
	if apiCode(err) != "AWS.SimpleQueueService.PurgeQueueInProgress" || !asErr(err, &inProgress) {
		t.Fatalf("second purge within 60s: %v", err)
	}
	e.clock.Step(time.Second)
	if _, err := e.sqs.PurgeQueue(e.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("purge after 60s: %v", err)
	}
}

func TestSQSReceiptHandlesAndVisibility(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "vis", nil)
	other := createQueue(t, e, "other", nil)
	for _, q := range []string{url, other} {
		if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String("x")}); err != nil {
			t.Fatal(err)
		}
	}
	mine := receive(t, e, url, 1, 0)[0].ReceiptHandle
	theirs := receive(t, e, other, 1, 0)[0].ReceiptHandle
	change := func(handle *string, timeout int32) error {
		_, err := e.sqs.ChangeMessageVisibility(e.ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: handle, VisibilityTimeout: timeout})
		return err
	}
	del := func(handle *string) error {
		_, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: handle})
		return err
	}
	checks := []struct {
		name string
		err  error
		code string
	}{
		{"change: bogus handle", change(aws.String("bogus"), 10), "ReceiptHandleIsInvalid"},
		{"change: another queue's handle", change(theirs, 10), "ReceiptHandleIsInvalid"},
		{"delete: another queue's handle", del(theirs), "ReceiptHandleIsInvalid"},
		{"change: over 12h", change(mine, 43201), "InvalidParameterValue"},
		{"change: 12h", change(mine, 43200), ""},
	}
	for _, c := range checks {
		if apiCode(c.err) != c.code {
			t.Errorf("%s: %v, want %q", c.name, c.err, c.code)
		}
	}
	e.clock.Step(6 * time.Hour)
	if err := change(mine, 43200); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("6h after the receive, another 12h: %v", err)
	}
	if err := change(mine, 6*3600); err != nil {
		t.Errorf("6h after the receive, 6h more: %v", err)
	}
	if err := del(mine); err != nil {
		t.Fatal(err)
	}
	if err := del(mine); err != nil {
		t.Errorf("a stale handle is accepted by DeleteMessage: %v", err)
	}
	if err := change(mine, 10); apiCode(err) != "AWS.SimpleQueueService.MessageNotInflight" {
		t.Errorf("change of a deleted message: %v", err)
	}
	if _, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 43201}); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("ReceiveMessage visibility over 12h: %v", err)
	}
}

func TestSQSChangeMessageVisibilityBatch(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "cvb", nil)
	for i := 0; i < 2; i++ {
		if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, e, url, 2, 0)
	out, err := e.sqs.ChangeMessageVisibilityBatch(e.ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url),
		Entries: []sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			{Id: aws.String("now"), ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 0},
			{Id: aws.String("later"), ReceiptHandle: got[1].ReceiptHandle, VisibilityTimeout: 300},
			{Id: aws.String("bogus"), ReceiptHandle: aws.String("bogus"), VisibilityTimeout: 5},
		}})
	if err != nil || len(out.Successful) != 2 || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		t.Fatalf("ChangeMessageVisibilityBatch: %v %+v", err, out)
	}
	if c := counts(t, e, url); c != "visible=1 notVisible=1 delayed=0" {
		t.Fatalf("after the batch: %s", c)
	}
	_, err = e.sqs.ChangeMessageVisibilityBatch(e.ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url),
		Entries: []sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			{Id: aws.String("a"), ReceiptHandle: got[0].ReceiptHandle}, {Id: aws.String("a"), ReceiptHandle: got[1].ReceiptHandle},
		}})
	if apiCode(err) != "AWS.SimpleQueueService.BatchEntryIdsNotDistinct" {
		t.Fatalf("repeated ids: %v", err)
	}
}

func TestSQSListQueues(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"app-a", "app-b", "app-c", "other"} {
		createQueue(t, e, n, nil)
	}
	var pages [][]string
	in := &sqs.ListQueuesInput{QueueNamePrefix: aws.String("app-"), MaxResults: aws.Int32(2)}
	for {
		out, err := e.sqs.ListQueues(e.ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, u := range out.QueueUrls {
			names = append(names, u[strings.LastIndex(u, "/")+1:])
		}
		pages = append(pages, names)
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if fmt.Sprint(pages) != "[[app-a app-b] [app-c]]" {
		t.Fatalf("pages %v", pages)
	}
	all, err := e.sqs.ListQueues(e.ctx, &sqs.ListQueuesInput{})
	if err != nil || len(all.QueueUrls) != 5 || all.NextToken != nil {
		t.Fatalf("all queues: %v %+v", err, all)
	}
	none, err := e.sqs.ListQueues(e.ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("zzz")})
	if err != nil || len(none.QueueUrls) != 0 {
		t.Fatalf("no match: %v %+v", err, none)
	}
	if _, err := e.sqs.ListQueues(e.ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1001)}); apiCode(err) != "InvalidParameterValue" {
		t.Fatalf("MaxResults 1001: %v", err)
	}
	if _, err := e.sqs.ListQueues(e.ctx, &sqs.ListQueuesInput{NextToken: aws.String("nonsense!")}); apiCode(err) != "InvalidParameterValue" {
		t.Fatalf("bad token: %v", err)
	}
}

// SQS leaves Messages out of an empty ReceiveMessage answer; the Go SDK
// cannot tell that from an empty list, so the wire is read directly.
func TestSQSEmptyReceiveOmitsMessages(t *testing.T) {
	e := newEnv(t)
	url := createQueue(t, e, "empty", nil)
	if status, b := rawSQS(t, e, "ReceiveMessage", `{"QueueUrl":"`+url+`"}`); status != 200 || string(b) != "{}" {
		t.Fatalf("empty receive: %d %s, want 200 {}", status, b)
	}
}
