package simulator

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/nodesmith/nodesmith/pkg/simulator/keda"
)

// simQueue is a workload's SQS queue in the simulated AWS, used through the
// real SQS client as the workers and KEDA would use it. It also keeps the
// workers waiting in a long poll, to wake them when messages appear.
type simQueue struct {
	s          *Sim
	name, url  string
	visibility time.Duration
	waitTime   int32
	client     *sqs.Client
	waiting    []*pod
	msgSerial  int
	// everSent turns on the "queue empty" milestone.
	everSent bool
}

func (q *simQueue) ctx() context.Context { return q.s.ctx }

// send puts n messages on the queue (in batches of ten, SQS's maximum) and
// wakes the waiting workers.
func (q *simQueue) send(n int) error {
	for n > 0 {
		batch := min(n, 10)
		entries := make([]sqstypes.SendMessageBatchRequestEntry, batch)
		for i := range entries {
			q.msgSerial++
			id := strconv.Itoa(q.msgSerial)
			entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String("message " + id)}
		}
		out, err := q.client.SendMessageBatch(q.ctx(), &sqs.SendMessageBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			return fmt.Errorf("sending to %s: %w", q.name, err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("sending to %s: %d messages failed: %s", q.name, len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
		n -= batch
	}
	q.everSent = true
	q.wake()
	return nil
}

// metrics is KEDA's GetQueueAttributes call.
func (q *simQueue) metrics() (keda.Metrics, error) {
	out, err := q.client.GetQueueAttributes(q.ctx(), &sqs.GetQueueAttributesInput{
		QueueUrl: &q.url,
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return keda.Metrics{}, err
	}
	attr := func(n sqstypes.QueueAttributeName) (int64, error) {
		v, ok := out.Attributes[string(n)]
		if !ok {
			return 0, nil
		}
		return strconv.ParseInt(v, 10, 64)
	}
	var m keda.Metrics
	var errs [3]error
	m.Visible, errs[0] = attr(sqstypes.QueueAttributeNameApproximateNumberOfMessages)
	m.InFlight, errs[1] = attr(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	m.Delayed, errs[2] = attr(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)
	for _, err := range errs {
		if err != nil {
			return keda.Metrics{}, fmt.Errorf("parsing queue attributes: %w", err)
		}
	}
	return m, nil
}

// receive takes one message; ok is false when none is visible.
func (q *simQueue) receive() (receipt string, ok bool, err error) {
	out, err := q.client.ReceiveMessage(q.ctx(), &sqs.ReceiveMessageInput{
		QueueUrl: &q.url, MaxNumberOfMessages: 1, WaitTimeSeconds: q.waitTime,
	})
	if err != nil {
		return "", false, err
	}
	if len(out.Messages) == 0 {
		return "", false, nil
	}
	return aws.ToString(out.Messages[0].ReceiptHandle), true, nil
}

func (q *simQueue) delete(receipt string) error {
	_, err := q.client.DeleteMessage(q.ctx(), &sqs.DeleteMessageInput{QueueUrl: &q.url, ReceiptHandle: &receipt})
	return err
}

// wait parks a worker pod in its long poll.
func (q *simQueue) wait(p *pod) { q.waiting = append(q.waiting, p) }

// forget drops a pod that went away from the waiting list.
func (q *simQueue) forget(p *pod) {
	for i, w := range q.waiting {
		if w == p {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return
		}
	}
}

// wake lets the waiting workers, longest waiting first, try the queue again.
func (q *simQueue) wake() {
	waiting := q.waiting
	q.waiting = nil
	for i, p := range waiting {
		rs, ok := p.owner.(*replicaSet)
		if !ok || rs.worker == nil || p.state != podRunning {
			continue
		}
		rs.worker.work(p)
		if len(q.waiting) > 0 && q.waiting[len(q.waiting)-1] == p {
			// The queue is empty again: the rest keep waiting, in order.
			q.waiting = append(q.waiting, waiting[i+1:]...)
			return
		}
	}
}
