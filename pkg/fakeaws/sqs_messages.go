package fakeaws

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type jsonAttr struct {
	DataType    string
	StringValue string `json:",omitempty"`
	BinaryValue []byte `json:",omitempty"`
}

// toAttrs keeps, per attribute, the value field its data type uses.
func toAttrs(in map[string]jsonAttr) map[string]MessageAttribute {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]MessageAttribute, len(in))
	for k, v := range in {
		a := MessageAttribute{DataType: v.DataType}
		if strings.HasPrefix(v.DataType, "Binary") {
			a.BinaryValue = v.BinaryValue
		} else {
			a.StringValue = v.StringValue
		}
		out[k] = a
	}
	return out
}

type sendEntry struct {
	Id                string
	MessageBody       *string
	DelaySeconds      *int
	MessageAttributes map[string]jsonAttr
	// MessageSystemAttributes: SQS knows one, AWSTraceHeader (a String).
	MessageSystemAttributes map[string]jsonAttr
}

// checkSend validates one message against the queue's limits and returns
// its size (body plus attributes), as SQS counts it.
func (w *World) checkSend(qname string, e sendEntry) (int, error) {
	if e.MessageBody == nil || *e.MessageBody == "" {
		return 0, errMissingParameter("MessageBody")
	}
	for name, a := range e.MessageSystemAttributes {
		if name != "AWSTraceHeader" {
			return 0, errInvalidParameter("Message system attribute name '%s' is invalid; the only message system attribute is AWSTraceHeader.", name)
		}
		if a.DataType != "String" || a.StringValue == "" {
			return 0, errInvalidParameter("Message system attribute AWSTraceHeader must be a non-empty String.")
		}
	}
	if e.DelaySeconds != nil && (*e.DelaySeconds < 0 || *e.DelaySeconds > maxDelaySeconds) {
		return 0, errInvalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= %d.", *e.DelaySeconds, maxDelaySeconds)
	}
	if !sqsText(*e.MessageBody) {
		return 0, errContents()
	}
	attrSize, err := checkMessageAttrs(e.MessageAttributes)
	if err != nil {
		return 0, err
	}
	size := len(*e.MessageBody) + attrSize
	limit := 0
	err = w.withQueue(qname, func(q *queue) error {
		limit = q.intAttr("MaximumMessageSize")
		return nil
	})
	if err != nil {
		return 0, err
	}
	if size > limit {
		return 0, errInvalidParameter("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", limit)
	}
	return size, nil
}

func (s *Server) send(qname string, e sendEntry) (map[string]string, error) {
	delay := -1
	if e.DelaySeconds != nil {
		delay = *e.DelaySeconds
	}
	var m *message
	err := s.w.withQueue(qname, func(*queue) error {
		var err error
		m, err = s.w.sendLocked(qname, *e.MessageBody, toAttrs(e.MessageAttributes), delay)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{"MessageId": m.id, "MD5OfMessageBody": m.md5Body}
	if m.md5Attrs != "" {
		out["MD5OfMessageAttributes"] = m.md5Attrs
	}
	if sys := toAttrs(e.MessageSystemAttributes); len(sys) > 0 {
		// The same digest as for message attributes, over the system ones.
		out["MD5OfMessageSystemAttributes"] = md5OfAttributes(sys)
	}
	return out, nil
}

func (s *Server) sqsSendMessage(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl string
		sendEntry
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	qname := queueName(in.QueueUrl)
	if _, err := s.w.checkSend(qname, in.sendEntry); err != nil {
		return nil, err
	}
	return s.send(qname, in.sendEntry)
}

type batchFailure struct {
	Id, Code, Message string
	SenderFault       bool
}

func failure(id string, err error) batchFailure {
	se := toSQSError(err)
	return batchFailure{Id: id, Code: se.code(), Message: se.msg, SenderFault: se.status < 500}
}

func (s *Server) sqsSendMessageBatch(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl string
		Entries  []sendEntry
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	if err := checkBatchIDs(ids); err != nil {
		return nil, err
	}
	qname := queueName(in.QueueUrl)
	if !s.w.hasQueue(qname) {
		return nil, errQueueMissing()
	}
	// The batch's total size is checked before any message is sent.
	total := 0
	errs := make([]error, len(in.Entries))
	for i, e := range in.Entries {
		size, err := s.w.checkSend(qname, e)
		errs[i] = err
		if err != nil && e.MessageBody != nil {
			size = len(*e.MessageBody) // a refused entry still counts its body
		}
		total += size
	}
	if total > maxBatchPayload {
		return nil, sqsErr("BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong;Sender",
			"Batch requests cannot be longer than %d bytes. You have sent %d bytes.", maxBatchPayload, total)
	}
	ok, failed := []map[string]string{}, []batchFailure{}
	for i, e := range in.Entries {
		if errs[i] != nil {
			failed = append(failed, failure(e.Id, errs[i]))
			continue
		}
		res, err := s.send(qname, e)
		if err != nil {
			return nil, err
		}
		res["Id"] = e.Id
		ok = append(ok, res)
	}
	return map[string]any{"Successful": ok, "Failed": failed}, nil
}

type jsonMessage struct {
	MessageId              string
	ReceiptHandle          string
	MD5OfBody              string
	Body                   string
	Attributes             map[string]string   `json:",omitempty"`
	MD5OfMessageAttributes string              `json:",omitempty"`
	MessageAttributes      map[string]jsonAttr `json:",omitempty"`
}

// maxLongPoll is the real-time bound on a ReceiveMessage wait (see Options.MaxLongPoll).
func (w *World) maxLongPoll() time.Duration {
	if w.opts.MaxLongPoll != nil {
		return max(*w.opts.MaxLongPoll, 0)
	}
	if w.realClk {
		return 20 * time.Second
	}
	return 0
}

func (s *Server) sqsReceiveMessage(r *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl                    string
		MaxNumberOfMessages         *int
		VisibilityTimeout           *int
		WaitTimeSeconds             *int
		AttributeNames              []string
		MessageSystemAttributeNames []string
		MessageAttributeNames       []string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	maxN := 1
	if in.MaxNumberOfMessages != nil {
		maxN = *in.MaxNumberOfMessages
	}
	if maxN < 1 || maxN > maxBatchEntries {
		return nil, errInvalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", maxN)
	}
	if in.WaitTimeSeconds != nil && (*in.WaitTimeSeconds < 0 || *in.WaitTimeSeconds > 20) {
		return nil, errInvalidParameter("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *in.WaitTimeSeconds)
	}
	if in.VisibilityTimeout != nil && (*in.VisibilityTimeout < 0 || *in.VisibilityTimeout > maxVisibility) {
		return nil, errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= %d, if provided.", *in.VisibilityTimeout, maxVisibility)
	}
	name := queueName(in.QueueUrl)
	var wait time.Duration
	var msgs []jsonMessage
	var notify chan struct{}
	sysNames := append(append([]string(nil), in.AttributeNames...), in.MessageSystemAttributeNames...)
	receive := func() error {
		return s.w.withQueue(name, func(q *queue) error {
			timeout := q.intAttr("VisibilityTimeout")
			if in.VisibilityTimeout != nil {
				timeout = *in.VisibilityTimeout
			}
			if in.WaitTimeSeconds != nil {
				wait = time.Duration(*in.WaitTimeSeconds) * time.Second
			} else {
				wait = time.Duration(q.intAttr("ReceiveMessageWaitTimeSeconds")) * time.Second
			}
			for _, m := range s.w.receiveLocked(q, maxN, time.Duration(timeout)*time.Second) {
				msgs = append(msgs, renderMessage(m, sysNames, in.MessageAttributeNames))
			}
			notify = q.notify
			return nil
		})
	}
	if err := receive(); err != nil {
		return nil, err
	}
	// Long polling waits in real time, bounded by MaxLongPoll, for a send to
	// the queue; with an injected clock it returns at once by default.
	deadline := time.Now().Add(min(wait, s.w.maxLongPoll()))
	for len(msgs) == 0 && time.Now().Before(deadline) {
		t := time.NewTimer(min(time.Until(deadline), 100*time.Millisecond))
		select {
		case <-notify:
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return nil, r.Context().Err()
		}
		t.Stop()
		if err := receive(); err != nil {
			return nil, err
		}
	}
	if len(msgs) == 0 {
		return struct{}{}, nil // SQS leaves Messages out of an empty answer
	}
	return map[string]any{"Messages": msgs}, nil
}

// wantAttr reports whether a message attribute name is selected by
// ReceiveMessage's MessageAttributeNames ("All", ".*", a name, or "prefix.*").
func wantAttr(names []string, name string) bool {
	for _, n := range names {
		switch {
		case n == "All" || n == ".*" || n == name:
			return true
		case strings.HasSuffix(n, ".*") && strings.HasPrefix(name, strings.TrimSuffix(n, "*")):
			return true
		}
	}
	return false
}

func renderMessage(m *message, sysNames, attrNames []string) jsonMessage {
	jm := jsonMessage{MessageId: m.id, ReceiptHandle: base64.RawURLEncoding.EncodeToString([]byte(m.receipt)), MD5OfBody: m.md5Body, Body: m.body}
	sys := map[string]string{
		"SentTimestamp":                    strconv.FormatInt(m.sentAt.UnixMilli(), 10),
		"ApproximateReceiveCount":          strconv.Itoa(m.receiveCount),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
		"SenderId":                         "AIDAFAKEAWSSENDER",
	}
	all := contains(sysNames, "All")
	for k, v := range sys {
		if all || contains(sysNames, k) {
			if jm.Attributes == nil {
				jm.Attributes = map[string]string{}
			}
			jm.Attributes[k] = v
		}
	}
	sel := map[string]MessageAttribute{}
	for k, a := range m.attrs {
		if wantAttr(attrNames, k) {
			sel[k] = a
		}
	}
	if len(sel) > 0 {
		jm.MessageAttributes = map[string]jsonAttr{}
		for k, a := range sel {
			jm.MessageAttributes[k] = jsonAttr{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
		jm.MD5OfMessageAttributes = md5OfAttributes(sel)
	}
	return jm
}

// parseReceipt decodes a receipt handle of the named queue; ok is false for
// a handle the queue could never have issued.
func parseReceipt(qname, handle string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(handle)
	if err != nil {
		return "", false
	}
	parts := strings.Split(string(b), "#")
	if len(parts) != 3 || parts[0] != qname {
		return "", false
	}
	if _, err := strconv.Atoi(parts[1]); err != nil {
		return "", false
	}
	return string(b), true
}

func errReceipt(handle string) *sqsError {
	return sqsErr("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid;Sender", "The input receipt handle \"%s\" is not a valid receipt handle.", handle)
}

// deleteOne deletes the message a receipt handle names. A stale handle (the
// message was received again since, or is gone) is accepted and changes
// nothing, as SQS does.
func (s *Server) deleteOne(qname, handle string) error {
	receipt, ok := parseReceipt(qname, handle)
	return s.w.withQueue(qname, func(q *queue) error {
		if !ok {
			return errReceipt(handle)
		}
		for i, m := range q.msgs {
			if m.receipt == receipt {
				q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
				return nil
			}
		}
		return nil
	})
}

func (s *Server) sqsDeleteMessage(_ *http.Request, body []byte) (any, error) {
	var in struct{ QueueUrl, ReceiptHandle string }
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	return nil, s.deleteOne(queueName(in.QueueUrl), in.ReceiptHandle)
}

// batch runs fn per entry after the batch rules, collecting SQS's
// Successful/Failed answer; a missing queue fails the whole call.
func (s *Server) batch(qname string, ids []string, fn func(i int) error) (any, error) {
	if err := checkBatchIDs(ids); err != nil {
		return nil, err
	}
	if !s.w.hasQueue(qname) {
		return nil, errQueueMissing()
	}
	ok, failed := []map[string]string{}, []batchFailure{}
	for i, id := range ids {
		if err := fn(i); err != nil {
			if toSQSError(err).typ == "QueueDoesNotExist" {
				return nil, err
			}
			failed = append(failed, failure(id, err))
			continue
		}
		ok = append(ok, map[string]string{"Id": id})
	}
	return map[string]any{"Successful": ok, "Failed": failed}, nil
}

func (s *Server) sqsDeleteMessageBatch(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl string
		Entries  []struct{ Id, ReceiptHandle string }
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	qname := queueName(in.QueueUrl)
	return s.batch(qname, ids, func(i int) error { return s.deleteOne(qname, in.Entries[i].ReceiptHandle) })
}

// changeVisibility sets a received message's visibility timeout, counted
// from now. The timeout may not take the message past 12 hours from the
// receive that issued the handle.
func (s *Server) changeVisibility(qname, handle string, timeout *int) error {
	if timeout == nil {
		return errMissingParameter("VisibilityTimeout")
	}
	if *timeout < 0 || *timeout > maxVisibility {
		return errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and %d, if provided.", *timeout, maxVisibility)
	}
	receipt, ok := parseReceipt(qname, handle)
	return s.w.withQueue(qname, func(q *queue) error {
		if !ok {
			return errReceipt(handle)
		}
		now := s.w.clock.Now()
		for _, m := range q.msgs {
			if m.receipt != receipt || !m.visibleAt.After(now) {
				continue
			}
			if now.Sub(m.receivedAt)+time.Duration(*timeout)*time.Second > maxVisibility*time.Second {
				return errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [%d seconds]", *timeout, maxVisibility)
			}
			m.visibleAt = now.Add(time.Duration(*timeout) * time.Second)
			return nil
		}
		return sqsErr("MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight;Sender", "The message referred to is not in flight.")
	})
}

func (s *Server) sqsChangeVisibility(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl, ReceiptHandle string
		VisibilityTimeout       *int
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	return nil, s.changeVisibility(queueName(in.QueueUrl), in.ReceiptHandle, in.VisibilityTimeout)
}

func (s *Server) sqsChangeVisibilityBatch(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl string
		Entries  []struct {
			Id, ReceiptHandle string
			VisibilityTimeout *int
		}
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	qname := queueName(in.QueueUrl)
	return s.batch(qname, ids, func(i int) error {
		e := in.Entries[i]
		return s.changeVisibility(qname, e.ReceiptHandle, e.VisibilityTimeout)
	})
}
