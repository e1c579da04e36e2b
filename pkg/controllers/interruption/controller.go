package interruption

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// Queue consumes the interruption queue, one receive per step.
type Queue struct {
	Deps
	sqs    SQSAPI
	opts   Options
	health *health

	// url is the resolved queue URL; failures count consecutive failed
	// calls for the backoff. Only the step touches them.
	url      string
	failures int
}

var _ operator.Singleton = (*Queue)(nil)

// NewQueue builds the queue consumer.
func NewQueue(deps Deps, client SQSAPI, opts Options) (*Queue, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if deps.Kube == nil || client == nil || deps.Clock == nil || deps.Metrics == nil {
		return nil, errors.New("the interruption queue needs a Kubernetes client, an SQS client, a clock and metrics")
	}
	return &Queue{Deps: deps, sqs: client, opts: opts, health: newHealth(deps, opts.Self)}, nil
}

// Name is the singleton's name.
func (q *Queue) Name() string { return "interruption.queue" }

// immediately is the RequeueAfter of a step whose successor is due at once
// (a long poll already waited, or more messages may be queued).
const immediately = time.Millisecond

// Reconcile runs one step: receive a batch, act on it, delete what was
// handled. Queue errors are reported and retried with backoff, never
// returned: the step has handled them.
func (q *Queue) Reconcile(ctx context.Context) (reconcile.Result, error) {
	url, err := q.queueURL(ctx)
	if err != nil {
		return q.failed(ctx, err), nil
	}
	out, err := q.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         int32(q.opts.MaxMessages),
		WaitTimeSeconds:             int32(q.opts.WaitTime / time.Second),
		VisibilityTimeout:           int32(q.opts.VisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if ctx.Err() != nil {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return q.failed(ctx, classify(q.opts.Queue, "ReceiveMessage", err)), nil
	}
	q.failures = 0
	q.health.set(ctx, nil)
	if len(out.Messages) == 0 {
		if q.opts.WaitTime == 0 {
			return reconcile.Result{RequeueAfter: q.opts.IdlePoll}, nil
		}
		return reconcile.Result{RequeueAfter: immediately}, nil
	}
	q.process(ctx, url, out.Messages)
	return reconcile.Result{RequeueAfter: immediately}, nil
}

func (q *Queue) failed(ctx context.Context, err error) reconcile.Result {
	var qe *queueError
	if !errors.As(err, &qe) {
		qe = classify(q.opts.Queue, "call", err)
	}
	if qe.class == errQueueMissing {
		q.url = "" // look the name up again: the queue may be recreated
	}
	q.Metrics.Interruption.QueueErrors.WithLabelValues(qe.class).Inc()
	q.health.set(ctx, qe)
	wait := operator.Backoff(q.failures, backoffBase, backoffMax)
	q.failures++
	return reconcile.Result{RequeueAfter: wait}
}

// work is one instance's share of a batch: its notices in message order.
type work struct {
	instance string
	msgs     []int // indexes into the batch
}

// outcome of one instance: managed is false when no NodeClaim has it.
type outcome struct {
	managed bool
	err     error
}

// process handles a received batch and deletes the messages whose actions
// were recorded.
func (q *Queue) process(ctx context.Context, url string, batch []sqstypes.Message) {
	logger := log.FromContext(ctx).WithName("interruption")
	received := q.Clock.Now()
	parsed := make([]messages.Message, len(batch))
	var units []work
	byInstance := map[string]int{}
	for i, m := range batch {
		parsed[i] = messages.Parse(aws.ToString(m.Body))
		q.Metrics.Interruption.MessagesReceived.WithLabelValues(string(parsed[i].Kind)).Inc()
		if sent, ok := sentAt(m); ok {
			q.Metrics.Interruption.MessageAge.Observe(max(0, received.Sub(sent).Seconds()))
		}
		for _, id := range parsed[i].InstanceIDs {
			u, ok := byInstance[id]
			if !ok {
				u = len(units)
				byInstance[id] = u
				units = append(units, work{instance: id})
			}
			units[u].msgs = append(units[u].msgs, i)
		}
	}
	results := q.runUnits(ctx, parsed, units, received)

	var entries []sqstypes.DeleteMessageBatchRequestEntry
	kinds := map[string]messages.Kind{}
	for i, m := range parsed {
		ok, managed := true, false
		var firstErr error
		for _, id := range m.InstanceIDs {
			r := results[byInstance[id]]
			managed = managed || r.managed
			if r.err != nil && ok {
				ok, firstErr = false, r.err
			}
		}
		switch {
		case m.Kind == messages.KindIgnored:
			q.Metrics.Interruption.MessagesIgnored.WithLabelValues(string(m.Ignored.Reason)).Inc()
			logger.V(1).Info("ignoring interruption message", "id", m.ID, "reason", m.Ignored.Reason, "detail", m.Ignored.Detail)
		case !ok:
			q.Metrics.Interruption.MessageErrors.WithLabelValues(string(m.Kind)).Inc()
			logger.Error(firstErr, "interruption notice not recorded; it is retried after the visibility timeout", "id", m.ID, "kind", m.Kind, "instances", m.InstanceIDs)
			continue
		case !managed:
			q.Metrics.Interruption.MessagesIgnored.WithLabelValues("not_managed").Inc()
		}
		id := strconv.Itoa(i)
		kinds[id] = m.Kind
		entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: batch[i].ReceiptHandle})
	}
	if len(entries) == 0 {
		return
	}
	out, err := q.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		// The actions are recorded and idempotent: redelivery repeats nothing.
		q.Metrics.Interruption.QueueErrors.WithLabelValues(classify(q.opts.Queue, "DeleteMessageBatch", err).class).Inc()
		logger.Error(err, "deleting handled interruption messages; they will be received again", "messages", len(entries))
		return
	}
	for _, s := range out.Successful {
		q.Metrics.Interruption.MessagesDeleted.WithLabelValues(string(kinds[aws.ToString(s.Id)])).Inc()
	}
	for _, f := range out.Failed {
		logger.Error(fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message)), "deleting an interruption message", "entry", aws.ToString(f.Id))
	}
}

// runUnits handles the batch's instances with at most Workers at once and
// returns their outcomes in unit order.
func (q *Queue) runUnits(ctx context.Context, parsed []messages.Message, units []work, received time.Time) []outcome {
	results := make([]outcome, len(units))
	operator.Each(q.opts.Workers, len(units), func(i int) {
		u := units[i]
		notices := make([]messages.Message, len(u.msgs))
		for j, mi := range u.msgs {
			notices[j] = parsed[mi]
		}
		managed, err := q.handleInstance(ctx, u.instance, notices, received)
		results[i] = outcome{managed: managed, err: err}
	})
	return results
}

// sentAt is when SQS received the message (its SentTimestamp attribute,
// milliseconds since the epoch).
func sentAt(m sqstypes.Message) (time.Time, bool) {
	ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}
