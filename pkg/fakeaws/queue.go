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
	// receivedAt is when the current receipt was handed out, for the 12-hour
	// bound on a message's total visibility timeout.
	receivedAt   time.Time
	visibleAt    time.Time
	receiveCount int
	receipt      string
}

type queue struct {
	name  string
	attrs map[string]string
	msgs  []*message
	// notify is closed and replaced on every send, waking long polls.
	notify            chan struct{}
	created, modified time.Time
	// purgedAt is the last PurgeQueue, which SQS allows once a minute.
	purgedAt time.Time
}

// Queue attribute defaults, as SQS sets them on a new standard queue
// (CreateQueue in the SQS API reference; the 1 MiB message size since 2025).
var queueDefaults = map[string]string{
	"VisibilityTimeout":             "30",
	"MessageRetentionPeriod":        "345600",
	"DelaySeconds":                  "0",
	"ReceiveMessageWaitTimeSeconds": "0",
	"MaximumMessageSize":            "1048576",
	"SqsManagedSseEnabled":          "true",
}

// CreateQueue creates a queue and returns its ARN. It is the world's admin
// call, not the API: attributes are taken as given, and an existing queue
// takes the attributes passed.
func (w *World) CreateQueue(name string, attrs map[string]string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.createQueueLocked(name, attrs)
	return w.queueARN(name)
}

func (w *World) createQueueLocked(name string, attrs map[string]string) *queue {
	now := w.clock.Now()
	if q, ok := w.queues[name]; ok {
		for k, v := range attrs {
			q.attrs[k] = v
		}
		q.modified = now
		return q
	}
	q := &queue{name: name, attrs: map[string]string{}, notify: make(chan struct{}), created: now, modified: now}
	for k, v := range queueDefaults {
		q.attrs[k] = v
	}
	for k, v := range attrs {
		q.attrs[k] = v
	}
	w.queues[name] = q
	delete(w.deletedQueues, name)
	return q
}

func (w *World) queueARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", w.opts.Region, w.opts.AccountID, name)
}

func (q *queue) intAttr(name string) int {
	n, _ := strconv.Atoi(q.attrs[name])
	return n
}

// counts splits the queue's messages as GetQueueAttributes does: visible;
// in flight (received, not deleted, visibility timeout running); delayed
// (sent with a delay that has not passed).
func (q *queue) counts(now time.Time) (visible, inFlight, delayed int) {
	for _, m := range q.msgs {
		switch {
		case !m.visibleAt.After(now):
			visible++
		case m.receiveCount == 0:
			delayed++
		default:
			inFlight++
		}
	}
	return visible, inFlight, delayed
}

// expireLocked drops messages older than the queue's retention period,
// counted from when they were first sent (a dead-lettered message keeps its
// original age, as in SQS).
func (w *World) expireLocked(q *queue) {
	now := w.clock.Now()
	retention := time.Duration(q.intAttr("MessageRetentionPeriod")) * time.Second
	if retention <= 0 {
		return
	}
	keep := q.msgs[:0]
	for _, m := range q.msgs {
		if now.Sub(m.sentAt) < retention {
			keep = append(keep, m)
		}
	}
	clear(q.msgs[len(keep):])
	q.msgs = keep
}

// QueueDepth returns how many messages are visible and how many are in
// flight; delayed messages are in neither (see QueueCounts).
func (w *World) QueueDepth(name string) (visible, inflight int) {
	visible, inflight, _ = w.QueueCounts(name)
	return visible, inflight
}

// QueueCounts returns the queue's visible, in-flight and delayed messages.
func (w *World) QueueCounts(name string) (visible, inFlight, delayed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q, ok := w.queues[name]
	if !ok {
		return 0, 0, 0
	}
	w.expireLocked(q)
	return q.counts(w.clock.Now())
}

// SendMessage enqueues a body (as a producer such as EventBridge would) and returns its message id.
func (w *World) SendMessage(queueName, body string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, err := w.sendLocked(queueName, body, nil, -1)
	if err != nil {
		return "", err
	}
	return m.id, nil
}

// sendLocked enqueues a message. delaySeconds < 0 means the queue's
// DelaySeconds; the caller has validated everything else.
func (w *World) sendLocked(queueName, body string, attrs map[string]MessageAttribute, delaySeconds int) (*message, error) {
	q, ok := w.queues[queueName]
	if !ok {
		return nil, errQueueMissing()
	}
	now := w.clock.Now()
	if delaySeconds < 0 {
		delaySeconds = q.intAttr("DelaySeconds")
	}
	sum := md5.Sum([]byte(body))
	m := &message{id: w.uuid(), body: body, md5Body: hex.EncodeToString(sum[:]), attrs: attrs,
		sentAt: now, visibleAt: now.Add(time.Duration(delaySeconds) * time.Second)}
	if len(attrs) > 0 {
		m.md5Attrs = md5OfAttributes(attrs)
	}
	q.msgs = append(q.msgs, m)
	close(q.notify)
	q.notify = make(chan struct{})
	return m, nil
}

// receiveLocked hands out up to max visible messages, hiding them for the
// visibility timeout, and moves messages that exceeded the redrive policy's
// maxReceiveCount to the dead-letter queue instead of delivering them.
func (w *World) receiveLocked(q *queue, max int, visibility time.Duration) []*message {
	w.expireLocked(q)
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
			m.firstReceive, m.receivedAt = time.Time{}, time.Time{}
			dlq.msgs = append(dlq.msgs, m)
			close(dlq.notify)
			dlq.notify = make(chan struct{})
			continue
		}
		m.receiveCount++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.receivedAt = now
		m.visibleAt = now.Add(visibility)
		m.receipt = fmt.Sprintf("%s#%d#%s", q.name, m.receiveCount, w.hex(24))
		out = append(out, m)
		keep = append(keep, m)
	}
	clear(q.msgs[len(keep):])
	q.msgs = keep
	return out
}

// redrivePolicy is the RedrivePolicy attribute's JSON; SQS accepts
// maxReceiveCount as a number or a string.
type redrivePolicy struct {
	Target string          `json:"deadLetterTargetArn"`
	Max    json.RawMessage `json:"maxReceiveCount"`
}

func parseRedrive(raw string) (target string, max int, err error) {
	var p redrivePolicy
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(string(trimQuotes(p.Max)))
	if err != nil {
		return "", 0, fmt.Errorf("maxReceiveCount %s is not an integer", p.Max)
	}
	return p.Target, n, nil
}

func (w *World) redrive(q *queue) (*queue, int) {
	raw := q.attrs["RedrivePolicy"]
	if raw == "" {
		return nil, 0
	}
	target, n, err := parseRedrive(raw)
	if err != nil {
		return nil, 0
	}
	return w.queueByARN(target), n
}

func (w *World) queueByARN(arn string) *queue {
	for name, d := range w.queues {
		if w.queueARN(name) == arn {
			return d
		}
	}
	return nil
}

func trimQuotes(b []byte) []byte {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		return b[1 : len(b)-1]
	}
	return b
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
