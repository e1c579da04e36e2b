package interruption

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// SQSAPI is the part of the SQS client the queue uses.
type SQSAPI interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Queue error classes (the error label of queue_errors_total).
const (
	errQueueMissing = "queue_missing"
	errAccessDenied = "access_denied"
	errUnavailable  = "unavailable"
)

// queueError classifies a failed queue call and says what to do about it.
type queueError struct {
	class string
	// reason is the condition reason: QueueNotFound, AccessDenied, QueueUnavailable.
	reason string
	msg    string
	err    error
}

func (e *queueError) Error() string { return e.msg }
func (e *queueError) Unwrap() error { return e.err }

// classify turns an SQS error into a message a user can act on.
func classify(queue, op string, err error) *queueError {
	var missing *sqstypes.QueueDoesNotExist
	var api smithy.APIError
	code := ""
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	switch {
	case errors.As(err, &missing) || code == "QueueDoesNotExist" || code == "AWS.SimpleQueueService.NonExistentQueue":
		return &queueError{class: errQueueMissing, reason: "QueueNotFound", err: err,
			msg: fmt.Sprintf("interruption queue %s does not exist: create it and the EventBridge rules that feed it, or fix --interruption-queue", queue)}
	case isAccessDenied(code):
		return &queueError{class: errAccessDenied, reason: "AccessDenied", err: err,
			msg: fmt.Sprintf("access to interruption queue %s denied (%s on %s): the controller's IAM role needs sqs:GetQueueUrl, sqs:ReceiveMessage and sqs:DeleteMessage on it, and the queue's KMS key if it has one", queue, code, op)}
	}
	return &queueError{class: errUnavailable, reason: "QueueUnavailable", err: err,
		msg: fmt.Sprintf("interruption queue %s: %s failed: %v", queue, op, err)}
}

func isAccessDenied(code string) bool {
	switch code {
	case "AccessDenied", "AccessDeniedException", "InvalidClientTokenId", "UnrecognizedClientException",
		"ExpiredToken", "ExpiredTokenException", "InvalidSecurity", "SignatureDoesNotMatch":
		return true
	}
	return strings.HasPrefix(code, "KMS.") || strings.HasSuffix(code, ".AccessDeniedException")
}

// queueURL resolves the configured queue: a URL is used as it is, a name
// is looked up once (and again after the queue was found missing).
func (q *Queue) queueURL(ctx context.Context) (string, error) {
	if q.url != "" {
		return q.url, nil
	}
	if strings.HasPrefix(q.opts.Queue, "https://") || strings.HasPrefix(q.opts.Queue, "http://") {
		q.url = q.opts.Queue
		return q.url, nil
	}
	out, err := q.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.opts.Queue)})
	if err != nil {
		return "", classify(q.opts.Queue, "GetQueueUrl", err)
	}
	q.url = aws.ToString(out.QueueUrl)
	return q.url, nil
}
