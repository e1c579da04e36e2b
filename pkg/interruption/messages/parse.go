package messages

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// EventBridge sources and detail-types this package understands.
const (
	SourceEC2    = "aws.ec2"
	SourceHealth = "aws.health"

	DetailSpotInterruption = "EC2 Spot Instance Interruption Warning"
	// DetailCapacityReservationInterruption is an interruptible capacity
	// reservation's warning to the account running instances in it (EC2
	// user guide, "Monitor interruptible Capacity Reservations").
	DetailCapacityReservationInterruption = "EC2 Capacity Reservation Instance Interruption Warning"
	DetailRebalance                       = "EC2 Instance Rebalance Recommendation"
	DetailStateChange                     = "EC2 Instance State-change Notification"
	DetailHealth                          = "AWS Health Event"
)

// envelope is the part of an EventBridge event every type shares.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// snsNotification is how SNS wraps a message it forwards to SQS (when the
// EventBridge rule targets a topic rather than the queue).
type snsNotification struct {
	Type    string `json:"Type"`
	Message string `json:"Message"`
}

// maxBody bounds what is parsed; SQS messages are at most 256 KiB.
const maxBody = 256 << 10

// Parse reads one message body. It never fails: what it cannot act on comes
// back as KindIgnored with the reason.
func Parse(body string) Message { return parse(body, true) }

func parse(body string, unwrapSNS bool) Message {
	if len(body) > maxBody {
		return ignored(Message{}, IgnoredMalformed, fmt.Sprintf("message of %d bytes is larger than SQS allows", len(body)))
	}
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return ignored(Message{}, IgnoredMalformed, "not a JSON object: "+shortErr(err))
	}
	if env.Source == "" && env.DetailType == "" {
		var sns snsNotification
		if unwrapSNS && json.Unmarshal([]byte(body), &sns) == nil && sns.Type == "Notification" && sns.Message != "" {
			return parse(sns.Message, false)
		}
		return ignored(Message{ID: env.ID}, IgnoredMalformed, "not an EventBridge event: no source or detail-type")
	}
	m := Message{ID: env.ID, Source: env.Source, DetailType: env.DetailType, Region: env.Region, Account: env.Account}
	if t, err := time.Parse(time.RFC3339, env.Time); err == nil {
		m.Time = t
	}
	switch {
	case env.Source == SourceEC2 && env.DetailType == DetailSpotInterruption:
		return spotInterruption(m, env)
	case env.Source == SourceEC2 && env.DetailType == DetailCapacityReservationInterruption:
		return reservationInterruption(m, env)
	case env.Source == SourceEC2 && env.DetailType == DetailRebalance:
		return rebalance(m, env)
	case env.Source == SourceEC2 && env.DetailType == DetailStateChange:
		return stateChange(m, env)
	case env.Source == SourceHealth && env.DetailType == DetailHealth:
		return health(m, env)
	}
	return ignored(m, IgnoredUnknownEvent, fmt.Sprintf("event %q from %q is not handled", clip(env.DetailType), clip(env.Source)))
}

// ec2Detail holds the detail fields of the aws.ec2 events we read.
type ec2Detail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
	// TerminationTime is a capacity reservation warning's
	// instance-termination-time.
	TerminationTime string `json:"instance-termination-time"`
}

func readEC2Detail(env envelope) (ec2Detail, error) {
	var d ec2Detail
	if len(env.Detail) == 0 || string(env.Detail) == "null" {
		return d, fmt.Errorf("no detail")
	}
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return d, fmt.Errorf("detail is not an object: %s", shortErr(err))
	}
	return d, nil
}

// instanceOf is the detail's instance id, or the one in the resources' ARNs.
func instanceOf(d ec2Detail, env envelope) (string, bool) {
	if IsInstanceID(d.InstanceID) {
		return d.InstanceID, true
	}
	if d.InstanceID == "" {
		for _, r := range env.Resources {
			if id := instanceFromResource(r); id != "" {
				return id, true
			}
		}
	}
	return "", false
}

func spotInterruption(m Message, env envelope) Message {
	d, err := readEC2Detail(env)
	if err != nil {
		return ignored(m, IgnoredMalformed, "spot interruption warning: "+err.Error())
	}
	id, ok := instanceOf(d, env)
	if !ok {
		return ignored(m, IgnoredMalformed, fmt.Sprintf("spot interruption warning without a valid instance-id (%q)", clip(d.InstanceID)))
	}
	m.Kind, m.InstanceIDs = KindSpotInterruption, []string{id}
	switch a := strings.ToLower(d.InstanceAction); a {
	case ActionStop, ActionHibernate:
		m.Action = a
	default:
		// terminate, or a value AWS may add later: the instance goes away either way.
		m.Action = ActionTerminate
	}
	if !m.Time.IsZero() {
		m.Deadline = spotDeadline(m.Time, m.Action)
	}
	return m
}

// reservationInterruption reads an interruptible capacity reservation's
// warning: the instance, its action (terminate is the only one EC2 sends
// today) and when it is terminated — instance-termination-time, else the
// event's time plus SpotNotice, as the warning comes two minutes before.
func reservationInterruption(m Message, env envelope) Message {
	d, err := readEC2Detail(env)
	if err != nil {
		return ignored(m, IgnoredMalformed, "capacity reservation interruption warning: "+err.Error())
	}
	id, ok := instanceOf(d, env)
	if !ok {
		return ignored(m, IgnoredMalformed, fmt.Sprintf("capacity reservation interruption warning without a valid instance-id (%q)", clip(d.InstanceID)))
	}
	m.Kind, m.InstanceIDs, m.Action = KindCapacityReservationInterruption, []string{id}, ActionTerminate
	if a := strings.ToLower(d.InstanceAction); a == ActionStop || a == ActionHibernate {
		m.Action = a
	}
	if t, err := time.Parse(time.RFC3339, d.TerminationTime); err == nil {
		m.Deadline = t.UTC()
	} else if !m.Time.IsZero() {
		m.Deadline = spotDeadline(m.Time, m.Action)
	}
	return m
}

func rebalance(m Message, env envelope) Message {
	d, err := readEC2Detail(env)
	if err != nil {
		return ignored(m, IgnoredMalformed, "rebalance recommendation: "+err.Error())
	}
	id, ok := instanceOf(d, env)
	if !ok {
		return ignored(m, IgnoredMalformed, fmt.Sprintf("rebalance recommendation without a valid instance-id (%q)", clip(d.InstanceID)))
	}
	m.Kind, m.InstanceIDs = KindRebalance, []string{id}
	return m
}

func stateChange(m Message, env envelope) Message {
	d, err := readEC2Detail(env)
	if err != nil {
		return ignored(m, IgnoredMalformed, "state-change notification: "+err.Error())
	}
	id, ok := instanceOf(d, env)
	if !ok {
		return ignored(m, IgnoredMalformed, fmt.Sprintf("state-change notification without a valid instance-id (%q)", clip(d.InstanceID)))
	}
	m.State = d.State
	switch d.State {
	case "stopping":
		m.Kind = KindInstanceStopping
	case "stopped":
		m.Kind = KindInstanceStopped
	case "shutting-down", "terminated":
		m.Kind = KindInstanceTerminated
	case "":
		return ignored(m, IgnoredMalformed, "state-change notification without a state")
	default:
		return ignored(m, IgnoredNotActionable, fmt.Sprintf("instance %s changed state to %q", id, clip(d.State)))
	}
	m.InstanceIDs = []string{id}
	m.Deadline = m.Time
	return m
}

// healthDetail holds the detail fields of an AWS Health event we read.
type healthDetail struct {
	EventArn          string `json:"eventArn"`
	Service           string `json:"service"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	StartTime         string `json:"startTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

func health(m Message, env envelope) Message {
	var d healthDetail
	if len(env.Detail) == 0 || string(env.Detail) == "null" {
		return ignored(m, IgnoredMalformed, "health event without detail")
	}
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return ignored(m, IgnoredMalformed, "health event detail is not an object: "+shortErr(err))
	}
	m.EventTypeCode = d.EventTypeCode
	if d.Service != "EC2" {
		return ignored(m, IgnoredNotActionable, fmt.Sprintf("health event for service %q, not EC2", clip(d.Service)))
	}
	if d.EventTypeCategory != "scheduledChange" {
		return ignored(m, IgnoredNotActionable, fmt.Sprintf("health event of category %q, not scheduledChange", clip(d.EventTypeCategory)))
	}
	var ids []string
	for _, e := range d.AffectedEntities {
		if IsInstanceID(e.EntityValue) {
			ids = append(ids, e.EntityValue)
		}
	}
	if len(d.AffectedEntities) == 0 {
		// Older events list the instances only as resources.
		for _, r := range env.Resources {
			if IsInstanceID(r) {
				ids = append(ids, r)
			} else if id := instanceFromResource(r); id != "" {
				ids = append(ids, id)
			}
		}
	}
	ids = dedupe(ids)
	if len(ids) == 0 {
		return ignored(m, IgnoredNotActionable, fmt.Sprintf("scheduled change %s names no EC2 instance", clip(d.EventTypeCode)))
	}
	m.Kind, m.InstanceIDs = KindScheduledChange, ids
	if t, ok := parseHealthTime(d.StartTime); ok {
		m.Deadline = t
	}
	return m
}

// parseHealthTime reads AWS Health's "Sat, 05 Jun 2016 15:10:09 GMT", or
// RFC 3339 as some tools write it.
func parseHealthTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC1123, time.RFC1123Z, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// IsInstanceID reports whether s looks like an EC2 instance id: "i-"
// followed by 8 or 17 lower-case hexadecimal digits.
func IsInstanceID(s string) bool {
	rest, ok := strings.CutPrefix(s, "i-")
	if !ok || (len(rest) != 8 && len(rest) != 17) {
		return false
	}
	for _, c := range rest {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// instanceFromResource reads the id out of an instance ARN
// (arn:aws:ec2:us-east-1:123456789012:instance/i-0123…).
func instanceFromResource(arn string) string {
	_, id, ok := strings.Cut(arn, ":instance/")
	if !ok || !strings.HasPrefix(arn, "arn:") || !IsInstanceID(id) {
		return ""
	}
	return id
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// clip keeps untrusted strings short in messages and logs.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func shortErr(err error) string { return clip(err.Error()) }
