package fakeaws

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
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

// code is the error code SDKs report: the query-compatible one when SQS sends it.
func (e *sqsError) code() string {
	if c, _, _ := strings.Cut(e.queryCode, ";"); c != "" {
		return c
	}
	return e.typ
}

func (s *Server) sqsHandlers() map[string]sqsHandler {
	return map[string]sqsHandler{
		"CreateQueue":                  s.sqsCreateQueue,
		"GetQueueUrl":                  s.sqsGetQueueURL,
		"ListQueues":                   s.sqsListQueues,
		"DeleteQueue":                  s.sqsDeleteQueue,
		"GetQueueAttributes":           s.sqsGetQueueAttributes,
		"SetQueueAttributes":           s.sqsSetQueueAttributes,
		"SendMessage":                  s.sqsSendMessage,
		"SendMessageBatch":             s.sqsSendMessageBatch,
		"ReceiveMessage":               s.sqsReceiveMessage,
		"DeleteMessage":                s.sqsDeleteMessage,
		"DeleteMessageBatch":           s.sqsDeleteMessageBatch,
		"ChangeMessageVisibility":      s.sqsChangeVisibility,
		"ChangeMessageVisibilityBatch": s.sqsChangeVisibilityBatch,
		"PurgeQueue":                   s.sqsPurgeQueue,
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
			// SQS's model: RequestThrottled, HTTP 403, a sender fault.
			return &sqsError{typ: "RequestThrottled", queryCode: "RequestThrottled;Sender", msg: "Rate exceeded", status: 403}
		case "InternalError":
			return &sqsError{typ: "InternalError", queryCode: "InternalError;Receiver", msg: ae.Message, status: 500}
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
		return errInvalidParameter("malformed request body: %v", err)
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
	if err := checkQueueName(in.QueueName, in.Attributes); err != nil {
		return nil, err
	}
	if err := s.w.apiCreateQueue(in.QueueName, in.Attributes); err != nil {
		return nil, err
	}
	return map[string]string{"QueueUrl": s.queueURL(r, in.QueueName)}, nil
}

// apiCreateQueue is CreateQueue as the API does it: validated attributes;
// an existing queue is answered only when every attribute passed has its
// value already; a name deleted less than a minute ago is refused.
func (w *World) apiCreateQueue(name string, attrs map[string]string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkQueueAttrs(attrs); err != nil {
		return err
	}
	now := w.clock.Now()
	if q, ok := w.queues[name]; ok {
		for _, k := range sortedKeys(attrs) {
			if q.attrs[k] != attrs[k] {
				return sqsErr("QueueNameExists", "QueueAlreadyExists;Sender",
					"A queue already exists with the same name and a different value for attribute %s", k)
			}
		}
		return nil
	}
	if at, ok := w.deletedQueues[name]; ok && now.Sub(at) < recreateInterval*time.Second {
		return sqsErr("QueueDeletedRecently", "AWS.SimpleQueueService.QueueDeletedRecently;Sender",
			"You must wait %d seconds after deleting a queue before you can create another with the same name.", recreateInterval)
	}
	w.createQueueLocked(name, attrs)
	return nil
}

func (s *Server) sqsGetQueueURL(r *http.Request, body []byte) (any, error) {
	var in struct{ QueueName string }
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if !s.w.hasQueue(in.QueueName) {
		return nil, errQueueMissing()
	}
	return map[string]string{"QueueUrl": s.queueURL(r, in.QueueName)}, nil
}

func (w *World) hasQueue(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.queues[name]
	return ok
}

// withQueue runs fn under the world lock with the named queue, after
// dropping its expired messages.
func (w *World) withQueue(name string, fn func(q *queue) error) error {
	w.mu.Lock()
	defer w.unlock()
	w.tickLocked()
	q, ok := w.queues[name]
	if !ok {
		return errQueueMissing()
	}
	w.expireLocked(q)
	return fn(q)
}

func (s *Server) sqsListQueues(r *http.Request, body []byte) (any, error) {
	var in struct {
		QueueNamePrefix string
		MaxResults      *int
		NextToken       string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.MaxResults != nil && (*in.MaxResults < 1 || *in.MaxResults > 1000) {
		return nil, errInvalidParameter("Value %d for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000.", *in.MaxResults)
	}
	names := s.w.queueNames(in.QueueNamePrefix)
	from := 0
	if in.NextToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		n, aerr := strconv.Atoi(string(raw))
		if err != nil || aerr != nil || n < 0 || n > len(names) {
			return nil, errInvalidParameter("Invalid NextToken value.")
		}
		from = n
	}
	// Without MaxResults SQS returns up to 1,000 queues and no token.
	to := min(len(names), from+1000)
	out := map[string]any{}
	if in.MaxResults != nil {
		to = min(len(names), from+*in.MaxResults)
		if to < len(names) {
			out["NextToken"] = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(to)))
		}
	}
	var urls []string
	for _, n := range names[from:to] {
		urls = append(urls, s.queueURL(r, n))
	}
	if len(urls) > 0 {
		out["QueueUrls"] = urls
	}
	return out, nil
}

func (w *World) queueNames(prefix string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for n := range w.queues {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (s *Server) sqsDeleteQueue(_ *http.Request, body []byte) (any, error) {
	var in struct{ QueueUrl string }
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	return nil, s.w.deleteQueue(queueName(in.QueueUrl))
}

func (w *World) deleteQueue(name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	q, ok := w.queues[name]
	if !ok {
		return errQueueMissing()
	}
	close(q.notify) // wake long polls, which then find the queue gone
	delete(w.queues, name)
	w.deletedQueues[name] = w.clock.Now()
	return nil
}

func (s *Server) sqsGetQueueAttributes(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl       string
		AttributeNames []string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	for _, n := range in.AttributeNames {
		if n != "All" && settableAttrs[n] == nil && !readOnlyAttrs[n] && !fifoAttrs[n] {
			return nil, errAttrName(n)
		}
	}
	name := queueName(in.QueueUrl)
	attrs := map[string]string{}
	err := s.w.withQueue(name, func(q *queue) error {
		for k, v := range q.attrs {
			attrs[k] = v
		}
		vis, inFlight, delayed := q.counts(s.w.clock.Now())
		attrs["ApproximateNumberOfMessages"] = strconv.Itoa(vis)
		attrs["ApproximateNumberOfMessagesNotVisible"] = strconv.Itoa(inFlight)
		attrs["ApproximateNumberOfMessagesDelayed"] = strconv.Itoa(delayed)
		attrs["CreatedTimestamp"] = strconv.FormatInt(q.created.Unix(), 10)
		attrs["LastModifiedTimestamp"] = strconv.FormatInt(q.modified.Unix(), 10)
		attrs["QueueArn"] = s.w.queueARN(name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// With no names SQS answers no attributes.
	all := contains(in.AttributeNames, "All")
	out := map[string]string{}
	for k, v := range attrs {
		if v != "" && (all || contains(in.AttributeNames, k)) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return struct{}{}, nil
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
		if err := s.w.checkQueueAttrs(in.Attributes); err != nil {
			return err
		}
		for k, v := range in.Attributes {
			q.attrs[k] = v
		}
		q.modified = s.w.clock.Now()
		return nil
	})
}

func (s *Server) sqsPurgeQueue(_ *http.Request, body []byte) (any, error) {
	var in struct{ QueueUrl string }
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	name := queueName(in.QueueUrl)
	return nil, s.w.withQueue(name, func(q *queue) error {
		now := s.w.clock.Now()
		if !q.purgedAt.IsZero() && now.Sub(q.purgedAt) < purgeInterval*time.Second {
			return sqsErr("PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress;Sender",
				"Only one PurgeQueue operation on %s is allowed every %d seconds.", name, purgeInterval)
		}
		q.purgedAt = now
		clear(q.msgs)
		q.msgs = nil
		return nil
	})
}
