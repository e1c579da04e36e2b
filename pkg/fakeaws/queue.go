package fakeaws

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// MessageAttribute is an SQS message attribute.
type MessageAttribute struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

type message struct {
	id, body, md5Body, md5Attrs string
	attrs                       map[string]MessageAttribute
	sentAt, firstReceive        time.Time
	visibleAt                   time.Time
	receiveCount                int
	receipt                     string
}

type queue struct {
	name   string
	attrs  map[string]string
	msgs   []*message
	notify chan struct{}
	// created is when the queue was made, for GetQueueAttributes.
	created time.Time
}

// Queue attribute defaults, as SQS sets them.
var queueDefaults = map[string]string{
	"VisibilityTimeout":             "30",
	"MessageRetentionPeriod":        "345600",
	"DelaySeconds":                  "0",
	"ReceiveMessageWaitTimeSeconds": "0",
	"MaximumMessageSize":            "262144",
}

// CreateQueue creates a queue (idempotent for an existing name) and returns its ARN.
func (w *World) CreateQueue(name string, attrs map[string]string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.createQueueLocked(name, attrs)
	return w.queueARN(name)
}

func (w *World) createQueueLocked(name string, attrs map[string]string) *queue {
	if q, ok := w.queues[name]; ok {
		for k, v := range attrs {
			q.attrs[k] = v
		}
		return q
	}
	q := &queue{name: name, attrs: map[string]string{}, notify: make(chan struct{}), created: w.clock.Now()}
	for k, v := range queueDefaults {
		q.attrs[k] = v
	}
	for k, v := range attrs {
		q.attrs[k] = v
	}
	w.queues[name] = q
	return q
}

func (w *World) queueARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", w.opts.Region, w.opts.AccountID, name)
}

// QueueDepth returns how many messages are visible and in flight.
func (w *World) QueueDepth(name string) (visible, inflight int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q, ok := w.queues[name]
	if !ok {
		return 0, 0
	}
	now := w.clock.Now()
	for _, m := range q.msgs {
		if m.visibleAt.After(now) {
			inflight++
		} else {
			visible++
		}
	}
	return visible, inflight
}

// SendMessage enqueues a body (as a producer such as EventBridge would) and returns its message id.
func (w *World) SendMessage(queueName, body string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, err := w.sendLocked(queueName, body, nil, 0)
	if err != nil {
		return "", err
	}
	return m.id, nil
}

func (w *World) sendLocked(queueName, body string, attrs map[string]MessageAttribute, delay time.Duration) (*message, error) {
	q, ok := w.queues[queueName]
	if !ok {
		return nil, errQueueMissing(queueName)
	}
	now := w.clock.Now()
	if delay == 0 {
		if d, err := strconv.Atoi(q.attrs["DelaySeconds"]); err == nil {
			delay = time.Duration(d) * time.Second
		}
	}
	sum := md5.Sum([]byte(body))
	m := &message{id: w.uuid(), body: body, md5Body: hex.EncodeToString(sum[:]), attrs: attrs,
		sentAt: now, visibleAt: now.Add(delay)}
	if len(attrs) > 0 {
		m.md5Attrs = md5OfAttributes(attrs)
	}
	q.msgs = append(q.msgs, m)
	close(q.notify)
	q.notify = make(chan struct{})
	return m, nil
}

func errQueueMissing(name string) *APIError {
	return apiErr(400, "QueueDoesNotExist", "The specified queue %s does not exist.", name)
}

// receiveLocked hands out up to max visible messages, hiding them for the
// visibility timeout, and moves messages that exceeded the redrive policy's
// maxReceiveCount to the dead-letter queue instead of delivering them.
func (w *World) receiveLocked(q *queue, max int, visibility time.Duration) []*message {
	now := w.clock.Now()
	dlq, maxReceive := w.redrive(q)
	var out []*message
	keep := q.msgs[:0]
	for _, m := range q.msgs {
		if len(out) >= max || m.visibleAt.After(now) {
			keep = append(keep, m)
			continue
		}
		if dlq != nil && maxReceive > 0 && m.receiveCount >= maxReceive {
			m.receiveCount, m.receipt, m.visibleAt = 0, "", now
			m.firstReceive = time.Time{}
			dlq.msgs = append(dlq.msgs, m)
			close(dlq.notify)
			dlq.notify = make(chan struct{})
			continue
		}
		m.receiveCount++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.visibleAt = now.Add(visibility)
		m.receipt = fmt.Sprintf("%s#%d#%s", q.name, m.receiveCount, w.hex(24))
		out = append(out, m)
		keep = append(keep, m)
	}
	q.msgs = keep
	return out
}

func (w *World) redrive(q *queue) (*queue, int) {
	raw := q.attrs["RedrivePolicy"]
	if raw == "" {
		return nil, 0
	}
	var p struct {
		Target string          `json:"deadLetterTargetArn"`
		Max    json.RawMessage `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(raw), &p) != nil {
		return nil, 0
	}
	n, err := strconv.Atoi(string(trimQuotes(p.Max)))
	if err != nil {
		return nil, 0
	}
	for name, d := range w.queues {
		if w.queueARN(name) == p.Target {
			return d, n
		}
	}
	return nil, 0
}

func trimQuotes(b []byte) []byte {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		return b[1 : len(b)-1]
	}
	return b
}

// deleteLocked removes the message a receipt handle names. A stale receipt
// (the message was received again since) is accepted and ignored, like SQS.
func deleteLocked(q *queue, receipt string) bool {
	for i, m := range q.msgs {
		if m.receipt == receipt && receipt != "" {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			return true
		}
	}
	return false
}

// md5OfAttributes computes MD5OfMessageAttributes the way SQS does: names
// sorted; for each, length-prefixed name, data type, a transport byte
// (1 string, 2 binary) and the length-prefixed value.
func md5OfAttributes(attrs map[string]MessageAttribute) string {
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	h := md5.New()
	put := func(b []byte) {
		n := len(b)
		h.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		h.Write(b)
	}
	for _, k := range names {
		a := attrs[k]
		put([]byte(k))
		put([]byte(a.DataType))
		if a.BinaryValue != nil {
			h.Write([]byte{2})
			put(a.BinaryValue)
		} else {
			h.Write([]byte{1})
			put([]byte(a.StringValue))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
