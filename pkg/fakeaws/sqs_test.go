package fakeaws_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/utils/clock"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func queueURL(t *testing.T, e *env, name string) string {
	t.Helper()
	out, err := e.sqs.GetQueueUrl(e.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("GetQueueUrl %s: %v", name, err)
	}
	return *out.QueueUrl
}

func receive(t *testing.T, e *env, url string, max int32, visibility int32) []sqstypes.Message {
	t.Helper()
	in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}}
	if visibility > 0 {
		in.VisibilityTimeout = visibility
	}
	out, err := e.sqs.ReceiveMessage(e.ctx, in)
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return out.Messages
}

func TestSQSSendReceiveDelete(t *testing.T) {
	e := newEnv(t)
	created, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("work")})
	if err != nil {
		t.Fatal(err)
	}
	url := queueURL(t, e, "work")
	if *created.QueueUrl != url || e.srv.QueueURL("work") != url {
		t.Fatalf("CreateQueue url %s, GetQueueUrl %s", *created.QueueUrl, url)
	}
	// The SDK verifies MD5OfMessageBody and MD5OfMessageAttributes; a wrong sum fails the call.
	if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("hello ✓"),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("greeting")},
			"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3}},
		}}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i := 0; i < 10; i++ {
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(fmt.Sprintf("m%d", i))})
	}
	batch, err := e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil || len(batch.Successful) != 10 || len(batch.Failed) != 0 {
		t.Fatalf("SendMessageBatch: %v %+v", err, batch)
	}
	_, err = e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: append(entries, entries[0])})
	var tooMany *sqstypes.TooManyEntriesInBatchRequest
	if !errors.As(err, &tooMany) {
		t.Fatalf("11 entries: %v", err)
	}

	first := receive(t, e, url, 10, 0)
	if len(first) != 10 {
		t.Fatalf("received %d, want 10 (MaxNumberOfMessages)", len(first))
	}
	m := first[0]
	if *m.Body != "hello ✓" || m.Attributes["ApproximateReceiveCount"] != "1" || m.Attributes["SentTimestamp"] != fmt.Sprint(epoch.UnixMilli()) {
		t.Fatalf("first message %q attrs %v", *m.Body, m.Attributes)
	}
	if rest := receive(t, e, url, 10, 0); len(rest) != 1 {
		t.Fatalf("second receive got %d, want the 1 left visible", len(rest))
	}
	var del []sqstypes.DeleteMessageBatchRequestEntry
	for i, msg := range first[1:] {
		del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: msg.ReceiptHandle})
	}
	db, err := e.sqs.DeleteMessageBatch(e.ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
	if err != nil || len(db.Successful) != 9 {
		t.Fatalf("DeleteMessageBatch: %v %+v", err, db)
	}
	if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	_, err = e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("bogus")})
	var badReceipt *sqstypes.ReceiptHandleIsInvalid
	if !errors.As(err, &badReceipt) {
		t.Fatalf("bogus receipt: %v", err)
	}
	// 30s default visibility: the undeleted message comes back, with receive count 2.
	e.clock.Step(31 * time.Second)
	again := receive(t, e, url, 10, 0)
	if len(again) != 1 || again[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after visibility timeout: %+v", again)
	}
	attrs, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "1" || attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["QueueArn"] != "arn:aws:sqs:us-east-1:123456789012:work" {
		t.Fatalf("GetQueueAttributes: %v %v", err, attrs.Attributes)
	}
}

func TestSQSErrors(t *testing.T) {
	e := newEnv(t)
	url := queueURL(t, e, "interruptions")
	_, err := e.sqs.GetQueueUrl(e.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var missing *sqstypes.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("missing queue: %v", err)
	}
	if _, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11}); apiCode(err) != "InvalidParameterValue" {
		t.Fatalf("MaxNumberOfMessages 11: %v", err)
	}
	e.world.InjectThrottle("sqs:ReceiveMessage", 2)
	if _, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("throttled receive should be retried: %v", err)
	}
	if got := e.world.Stats()["sqs:ReceiveMessage"]; got != 4 {
		t.Fatalf("receive calls %d, want 4 (1 bad + 2 throttled + 1 ok)", got)
	}
}

func TestSQSRedriveAfterMaxReceiveCount(t *testing.T) {
	e := newEnv(t)
	dlqARN := e.world.CreateQueue("work-dlq", nil)
	_, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"), Attributes: map[string]string{
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, dlqARN),
		"VisibilityTimeout": "10",
	}})
	if err != nil {
		t.Fatal(err)
	}
	url := queueURL(t, e, "work")
	if _, err := e.world.SendMessage("work", "poison"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		got := receive(t, e, url, 1, 0)
		if len(got) != 1 || got[0].Attributes["ApproximateReceiveCount"] != fmt.Sprint(i) {
			t.Fatalf("receive %d: %+v", i, got)
		}
		e.clock.Step(11 * time.Second)
	}
	if got := receive(t, e, url, 1, 0); len(got) != 0 {
		t.Fatalf("fourth receive delivered %q; it should have gone to the DLQ", *got[0].Body)
	}
	if vis, inflight := e.world.QueueDepth("work-dlq"); vis != 1 || inflight != 0 {
		t.Fatalf("dlq depth %d/%d", vis, inflight)
	}
	dlq := receive(t, e, queueURL(t, e, "work-dlq"), 10, 0)
	if len(dlq) != 1 || *dlq[0].Body != "poison" || dlq[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("dlq message %+v", dlq)
	}
}

func TestSQSLongPolling(t *testing.T) {
	wait := 5 * time.Second
	e := newEnv(t, func(o *fakeaws.Options) { o.Clock = clock.RealClock{}; o.MaxLongPoll = &wait })
	url := queueURL(t, e, "interruptions")
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = e.world.SendMessage("interruptions", "late")
	}()
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || *out.Messages[0].Body != "late" {
		t.Fatalf("long poll did not return the message sent during the wait: %+v", out.Messages)
	}
	// With an injected clock and no MaxLongPoll, an empty long poll returns at once.
	f := newEnv(t)
	out, err = f.sqs.ReceiveMessage(f.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL(t, f, "interruptions")), WaitTimeSeconds: 20})
	if err != nil || len(out.Messages) != 0 {
		t.Fatalf("virtual-time long poll: %v %+v", err, out)
	}
}

func TestSQSQueueAdministration(t *testing.T) {
	e := newEnv(t)
	url := queueURL(t, e, "interruptions")
	if _, err := e.sqs.SetQueueAttributes(e.ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"VisibilityTimeout": "5"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := e.world.SendMessage("interruptions", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, e, url, 1, 0)
	if _, err := e.sqs.ChangeMessageVisibility(e.ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 60}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(10 * time.Second) // past the queue's 5s, inside the message's 60s
	if vis, inflight := e.world.QueueDepth("interruptions"); vis != 2 || inflight != 1 {
		t.Fatalf("depth %d visible %d in flight, want 2 and 1", vis, inflight)
	}
	if _, err := e.sqs.PurgeQueue(e.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	if vis, inflight := e.world.QueueDepth("interruptions"); vis+inflight != 0 {
		t.Fatalf("purge left %d messages", vis+inflight)
	}
	if _, err := e.sqs.TagQueue(e.ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{"a": "b"}}); apiCode(err) != "AWS.SimpleQueueService.UnsupportedOperation" {
		t.Fatalf("unsimulated operation: %v", err)
	}
}
