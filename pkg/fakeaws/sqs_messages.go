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

func toAttrs(in map[string]jsonAttr) map[string]MessageAttribute {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]MessageAttribute, len(in))
	for k, v := range in {
		out[k] = MessageAttribute{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

type sendEntry struct {
	Id                string
	MessageBody       string
	DelaySeconds      int
	MessageAttributes map[string]jsonAttr
}

func (s *Server) send(qname string, e sendEntry) (map[string]string, error) {
	if e.MessageBody == "" {
		return nil, sqsErr("InvalidParameterValueException", "MissingParameter;Sender", "The request must contain the parameter MessageBody.")
	}
	if e.DelaySeconds < 0 || e.DelaySeconds > 900 {
		return nil, sqsErr("InvalidParameterValueException", "InvalidParameterValue;Sender", "DelaySeconds must be between 0 and 900")
	}
	var m *message
	err := s.w.withQueue(qname, func(*queue) error {
		var err error
		m, err = s.w.sendLocked(qname, e.MessageBody, toAttrs(e.MessageAttributes), time.Duration(e.DelaySeconds)*time.Second)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{"MessageId": m.id, "MD5OfMessageBody": m.md5Body}
	if m.md5Attrs != "" {
		out["MD5OfMessageAttributes"] = m.md5Attrs
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
	return s.send(queueName(in.QueueUrl), in.sendEntry)
}

type batchFailure struct {
	Id, Code, Message string
	SenderFault       bool
}

// checkBatch applies SQS's batch rules (1–10 entries, distinct ids) to
// entries, reading each entry's id with id.
func checkBatch[E any](entries []E, id func(E) string) error {
	n := len(entries)
	if n == 0 {
		return sqsErr("EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest;Sender", "There should be at least one entry in the request.")
	}
	if n > 10 {
		return sqsErr("TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest;Sender", "Maximum number of entries per request are 10. You have sent %d.", n)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[id(e)] {
			return sqsErr("BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct;Sender", "Id %s repeated.", id(e))
		}
		seen[id(e)] = true
	}
	return nil
}

func (s *Server) sqsSendMessageBatch(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl string
		Entries  []sendEntry
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := checkBatch(in.Entries, func(e sendEntry) string { return e.Id }); err != nil {
		return nil, err
	}
	ok, failed := []map[string]string{}, []batchFailure{}
	for _, e := range in.Entries {
		res, err := s.send(queueName(in.QueueUrl), e)
		if err != nil {
			se := toSQSError(err)
			if se.typ == "QueueDoesNotExist" {
				return nil, err
			}
			failed = append(failed, batchFailure{Id: e.Id, Code: se.typ, Message: se.msg, SenderFault: true})
			continue
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
	if maxN < 1 || maxN > 10 {
		return nil, sqsErr("InvalidParameterValueException", "InvalidParameterValue;Sender",
			"Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", maxN)
	}
	if in.WaitTimeSeconds != nil && (*in.WaitTimeSeconds < 0 || *in.WaitTimeSeconds > 20) {
		return nil, sqsErr("InvalidParameterValueException", "InvalidParameterValue;Sender",
			"Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *in.WaitTimeSeconds)
	}
	name := queueName(in.QueueUrl)
	var wait time.Duration
	var msgs []jsonMessage
	var notify chan struct{}
	sysNames := append(append([]string(nil), in.AttributeNames...), in.MessageSystemAttributeNames...)
	receive := func() error {
		return s.w.withQueue(name, func(q *queue) error {
			vis := in.VisibilityTimeout
			timeout, _ := strconv.Atoi(q.attrs["VisibilityTimeout"])
			if vis != nil {
				timeout = *vis
			}
			if in.WaitTimeSeconds != nil {
				wait = time.Duration(*in.WaitTimeSeconds) * time.Second
			} else if d, err := strconv.Atoi(q.attrs["ReceiveMessageWaitTimeSeconds"]); err == nil {
				wait = time.Duration(d) * time.Second
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
	return map[string]any{"Messages": msgs}, nil
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
	if len(m.attrs) > 0 && len(attrNames) > 0 {
		sel := map[string]MessageAttribute{}
		for k, a := range m.attrs {
			if contains(attrNames, "All") || contains(attrNames, ".*") || contains(attrNames, k) {
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
	}
	return jm
}

func decodeReceipt(h string) string {
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return ""
	}
	return string(b)
}

func (s *Server) deleteOne(qname, handle string) error {
	receipt := decodeReceipt(handle)
	if !strings.HasPrefix(receipt, qname+"#") {
		return sqsErr("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid;Sender", "The input receipt handle \"%s\" is not a valid receipt handle.", handle)
	}
	return s.w.withQueue(qname, func(q *queue) error {
		deleteLocked(q, receipt)
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

func (s *Server) sqsDeleteMessageBatch(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl string
		Entries  []struct{ Id, ReceiptHandle string }
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := checkBatch(in.Entries, func(e struct{ Id, ReceiptHandle string }) string { return e.Id }); err != nil {
		return nil, err
	}
	ok, failed := []map[string]string{}, []batchFailure{}
	for _, e := range in.Entries {
		if err := s.deleteOne(queueName(in.QueueUrl), e.ReceiptHandle); err != nil {
			se := toSQSError(err)
			if se.typ == "QueueDoesNotExist" {
				return nil, err
			}
			failed = append(failed, batchFailure{Id: e.Id, Code: se.typ, Message: se.msg, SenderFault: true})
			continue
		}
		ok = append(ok, map[string]string{"Id": e.Id})
	}
	return map[string]any{"Successful": ok, "Failed": failed}, nil
}

func (s *Server) sqsChangeVisibility(_ *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl, ReceiptHandle string
		VisibilityTimeout       int
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	receipt := decodeReceipt(in.ReceiptHandle)
	return nil, s.w.withQueue(queueName(in.QueueUrl), func(q *queue) error {
		for _, m := range q.msgs {
			if m.receipt == receipt && receipt != "" {
				m.visibleAt = s.w.clock.Now().Add(time.Duration(in.VisibilityTimeout) * time.Second)
				return nil
			}
		}
		return sqsErr("MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight;Sender", "The message referred to is not in flight.")
	})
}

func (s *Server) sqsPurgeQueue(_ *http.Request, body []byte) (any, error) {
	var in struct{ QueueUrl string }
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	return nil, s.w.withQueue(queueName(in.QueueUrl), func(q *queue) error {
		q.msgs = nil
		return nil
	})
}
