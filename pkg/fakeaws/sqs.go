package fakeaws

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

type sqsHandler func(r *http.Request, body []byte) (any, error)

// sqsError carries the JSON error type and the query-compatible code SQS
// sends in X-Amzn-Query-Error.
type sqsError struct {
	typ, queryCode, msg string
	status              int
}

func (e *sqsError) Error() string { return e.typ + ": " + e.msg }

func sqsErr(typ, queryCode, format string, args ...any) *sqsError {
	return &sqsError{typ: typ, queryCode: queryCode, msg: fmt.Sprintf(format, args...), status: 400}
}

func (s *Server) sqsHandlers() map[string]sqsHandler {
	return map[string]sqsHandler{
		"CreateQueue":             s.sqsCreateQueue,
		"GetQueueUrl":             s.sqsGetQueueURL,
		"GetQueueAttributes":      s.sqsGetQueueAttributes,
		"SetQueueAttributes":      s.sqsSetQueueAttributes,
		"SendMessage":             s.sqsSendMessage,
		"SendMessageBatch":        s.sqsSendMessageBatch,
		"ReceiveMessage":          s.sqsReceiveMessage,
		"DeleteMessage":           s.sqsDeleteMessage,
		"DeleteMessageBatch":      s.sqsDeleteMessageBatch,
		"ChangeMessageVisibility": s.sqsChangeVisibility,
		"PurgeQueue":              s.sqsPurgeQueue,
	}
}

func (s *Server) serveSQS(rw http.ResponseWriter, r *http.Request, op string, body []byte) {
	rid := s.requestID()
	h, ok := s.sqsH[op]
	var out any
	var err error
	switch {
	case !ok:
		s.w.count("sqs:" + op)
		err = sqsErr("UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation;Sender", "operation %s is not simulated", op)
	default:
		if fault := s.admit("sqs:" + op); fault != nil {
			err = fault
		} else {
			out, err = h(r, body)
		}
	}
	writeJSON(rw, "application/x-amz-json-1.0", rid, out, toSQSError(err))
}

func toSQSError(err error) *sqsError {
	if err == nil {
		return nil
	}
	var se *sqsError
	if errors.As(err, &se) {
		return se
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case "RequestLimitExceeded":
			return &sqsError{typ: "RequestThrottled", msg: "Rate exceeded", status: 400}
		case "InternalError":
			return &sqsError{typ: "InternalError", queryCode: "InternalError;Receiver", msg: ae.Message, status: 500}
		case "QueueDoesNotExist":
			return sqsErr("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue;Sender", "%s", ae.Message)
		}
		return &sqsError{typ: ae.Code, queryCode: ae.Code + ";Sender", msg: ae.Message, status: 400}
	}
	return &sqsError{typ: "InternalError", msg: err.Error(), status: 500}
}

// writeJSON renders an AWS JSON 1.0/1.1 response or error.
func writeJSON(rw http.ResponseWriter, ctype, rid string, out any, e *sqsError) {
	rw.Header().Set("Content-Type", ctype)
	rw.Header().Set("x-amzn-RequestId", rid)
	if e != nil {
		if e.queryCode != "" {
			rw.Header().Set("x-amzn-query-error", e.queryCode)
		}
		rw.WriteHeader(e.status)
		b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + e.typ, "message": e.msg})
		if ctype == ssmContentType {
			b, _ = json.Marshal(map[string]string{"__type": e.typ, "message": e.msg})
		}
		_, _ = rw.Write(b)
		return
	}
	if out == nil {
		out = struct{}{}
	}
	b, err := json.Marshal(out)
	if err != nil {
		rw.WriteHeader(500)
		return
	}
	_, _ = rw.Write(b)
}

func (s *Server) queueURL(r *http.Request, name string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/%s/%s", scheme, r.Host, s.w.opts.AccountID, name)
}

// queueName takes the queue name from a queue URL (its last path segment).
func queueName(u string) string {
	u = strings.TrimRight(u, "/")
	return u[strings.LastIndex(u, "/")+1:]
}

func decode(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return sqsErr("InvalidParameterValueException", "InvalidParameterValue;Sender", "malformed request body: %v", err)
	}
	return nil
}

func (s *Server) sqsCreateQueue(r *http.Request, body []byte) (any, error) {
	var in struct {
		QueueName  string
		Attributes map[string]string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.QueueName == "" {
		return nil, sqsErr("InvalidParameterValueException", "InvalidParameterValue;Sender", "QueueName is required")
	}
	s.w.CreateQueue(in.QueueName, in.Attributes)
	return map[string]string{"QueueUrl": s.queueURL(r, in.QueueName)}, nil
}

func (s *Server) sqsGetQueueURL(r *http.Request, body []byte) (any, error) {
	var in struct{ QueueName string }
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if !s.w.hasQueue(in.QueueName) {
		return nil, errQueueMissing(in.QueueName)
	}
	return map[string]string{"QueueUrl": s.queueURL(r, in.QueueName)}, nil
}

func (w *World) hasQueue(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.queues[name]
	return ok
}

// withQueue runs fn under the world lock with the named queue.
func (w *World) withQueue(name string, fn func(q *queue) error) error {
	w.mu.Lock()
	defer w.unlock()
	w.tickLocked()
	q, ok := w.queues[name]
	if !ok {
		return errQueueMissing(name)
	}
	return fn(q)
}

func (s *Server) sqsGetQueueAttributes(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl       string
		AttributeNames []string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	name := queueName(in.QueueUrl)
	attrs := map[string]string{}
	err := s.w.withQueue(name, func(q *queue) error {
		for k, v := range q.attrs {
			attrs[k] = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	vis, inflight := s.w.QueueDepth(name)
	attrs["ApproximateNumberOfMessages"] = strconv.Itoa(vis)
	attrs["ApproximateNumberOfMessagesNotVisible"] = strconv.Itoa(inflight)
	attrs["ApproximateNumberOfMessagesDelayed"] = "0"
	attrs["QueueArn"] = s.w.queueARN(name)
	all := len(in.AttributeNames) == 0 || contains(in.AttributeNames, "All")
	out := map[string]string{}
	for k, v := range attrs {
		if all || contains(in.AttributeNames, k) {
			out[k] = v
		}
	}
	return map[string]any{"Attributes": out}, nil
}

func (s *Server) sqsSetQueueAttributes(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl   string
		Attributes map[string]string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	return nil, s.w.withQueue(queueName(in.QueueUrl), func(q *queue) error {
		for k, v := range in.Attributes {
			q.attrs[k] = v
		}
		return nil
	})
}
