package fakeaws

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// InterruptionNotice is how long a spot instance runs after its warning.
const InterruptionNotice = 2 * time.Minute

// eventBridge is the envelope EventBridge puts on every event it delivers to SQS.
type eventBridge struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     any      `json:"detail"`
}

// publish sends an EventBridge-shaped message to the interruption queue, if one is configured.
func (w *World) publish(detailType, source string, resources []string, detail any, at time.Time) {
	if w.opts.InterruptionQueue == "" {
		return
	}
	body, err := json.Marshal(eventBridge{
		Version: "0", ID: w.uuid(), DetailType: detailType, Source: source, Account: w.opts.AccountID,
		Time: at.UTC().Format(time.RFC3339), Region: w.opts.Region, Resources: resources, Detail: detail,
	})
	if err != nil {
		return // the envelope is plain data; Marshal cannot fail on it
	}
	_, _ = w.sendLocked(w.opts.InterruptionQueue, string(body), nil, -1)
}

func (w *World) instanceARN(in *Instance) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", w.opts.Region, w.opts.AccountID, in.ID)
}

func (w *World) publishStateChange(in *Instance, at time.Time) {
	w.publish("EC2 Instance State-change Notification", "aws.ec2", []string{w.instanceARN(in)},
		map[string]string{"instance-id": in.ID, "state": in.State}, at)
}

func (w *World) liveInstance(id string) (*Instance, error) {
	in, ok := w.instances[id]
	if !ok || in.State == StateTerminated || in.State == StateShuttingDown {
		return nil, apiErr(400, "InvalidInstanceID.NotFound", "no live instance %s", id)
	}
	return in, nil
}

// Interrupt reclaims a spot instance: it publishes a rebalance recommendation
// and the spot interruption warning now, and terminates the instance
// InterruptionNotice later (at the first Tick at or after that time).
func (w *World) Interrupt(instanceID string) error {
	w.mu.Lock()
	defer w.unlock()
	w.tickLocked()
	in, err := w.liveInstance(instanceID)
	if err != nil {
		return err
	}
	if in.CapacityType != CapacitySpot {
		return apiErr(400, "InvalidParameterValue", "instance %s is not a spot instance", instanceID)
	}
	if !in.InterruptAt.IsZero() {
		return nil
	}
	now := w.clock.Now()
	arn := w.instanceARN(in)
	w.publish("EC2 Instance Rebalance Recommendation", "aws.ec2", []string{arn},
		map[string]string{"instance-id": in.ID}, now)
	w.publish("EC2 Spot Instance Interruption Warning", "aws.ec2", []string{arn},
		map[string]string{"instance-id": in.ID, "instance-action": "terminate"}, now)
	in.InterruptAt = now.Add(InterruptionNotice)
	w.schedule(in.InterruptAt, timerInterrupt, in.ID)
	w.emit(EventInterrupted, in)
	return nil
}

// Rebalance publishes a rebalance recommendation for a live instance.
func (w *World) Rebalance(instanceID string) error {
	w.mu.Lock()
	defer w.unlock()
	in, err := w.liveInstance(instanceID)
	if err != nil {
		return err
	}
	w.publish("EC2 Instance Rebalance Recommendation", "aws.ec2", []string{w.instanceARN(in)},
		map[string]string{"instance-id": in.ID}, w.clock.Now())
	w.emit(EventRebalance, in)
	return nil
}

// healthTimeFormat is how AWS Health writes times in event details
// ("Sat, 05 Jun 2016 15:10:09 GMT").
const healthTimeFormat = "Mon, 02 Jan 2006 15:04:05 GMT"

// healthDetail is the detail of an "AWS Health Event" as EventBridge
// delivers it today (AWS Health user guide, "AWS Health events Amazon
// EventBridge schema"): scope, communication id, status, event region, the
// affected account and the paging fields came with the 2023 schema.
type healthDetail struct {
	EventArn          string              `json:"eventArn"`
	Service           string              `json:"service"`
	EventTypeCode     string              `json:"eventTypeCode"`
	EventTypeCategory string              `json:"eventTypeCategory"`
	EventScopeCode    string              `json:"eventScopeCode"`
	CommunicationID   string              `json:"communicationId"`
	StartTime         string              `json:"startTime"`
	EndTime           string              `json:"endTime,omitempty"`
	LastUpdatedTime   string              `json:"lastUpdatedTime"`
	StatusCode        string              `json:"statusCode"`
	EventRegion       string              `json:"eventRegion"`
	Description       []map[string]string `json:"eventDescription"`
	AffectedEntities  []map[string]string `json:"affectedEntities"`
	AffectedAccount   string              `json:"affectedAccount"`
	Page              string              `json:"page"`
	TotalPages        string              `json:"totalPages"`
}

// ScheduleChange publishes an AWS Health scheduledChange event (instance
// retirement) for a live instance starting at start. The instance is not
// stopped by the fake; acting on the notice is the consumer's job.
func (w *World) ScheduleChange(instanceID string, start time.Time) error {
	w.mu.Lock()
	defer w.unlock()
	in, err := w.liveInstance(instanceID)
	if err != nil {
		return err
	}
	const code = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
	id := w.uuid()
	now := w.clock.Now().UTC().Format(healthTimeFormat)
	d := healthDetail{
		EventArn:          fmt.Sprintf("arn:aws:health:%s::event/EC2/%s/%s_%s", w.opts.Region, code, code, id),
		Service:           "EC2",
		EventTypeCode:     code,
		EventTypeCategory: "scheduledChange",
		EventScopeCode:    "ACCOUNT_SPECIFIC",
		CommunicationID:   strings.ReplaceAll(id, "-", "") + "-1",
		StartTime:         start.UTC().Format(healthTimeFormat),
		LastUpdatedTime:   now,
		StatusCode:        "upcoming",
		EventRegion:       w.opts.Region,
		Description:       []map[string]string{{"language": "en_US", "latestDescription": "EC2 has detected degradation of the underlying hardware hosting your instance; it is scheduled for retirement."}},
		AffectedEntities:  []map[string]string{{"entityValue": in.ID, "lastUpdatedTime": now}},
		AffectedAccount:   w.opts.AccountID,
		Page:              "1",
		TotalPages:        "1",
	}
	w.publish("AWS Health Event", "aws.health", []string{in.ID}, d, w.clock.Now())
	w.emit(EventScheduled, in)
	return nil
}

// InterruptRandom interrupts one running spot instance chosen with the
// world's seeded generator, returning its id (false when there is none). The
// fake-aws binary uses it to reclaim capacity now and then.
func (w *World) InterruptRandom() (string, bool) {
	w.mu.Lock()
	var cands []string
	for _, id := range w.instOrder {
		in := w.instances[id]
		if in.CapacityType == CapacitySpot && in.State == StateRunning && in.InterruptAt.IsZero() {
			cands = append(cands, id)
		}
	}
	if len(cands) == 0 {
		w.mu.Unlock()
		return "", false
	}
	id := cands[w.rng.Intn(len(cands))]
	w.mu.Unlock()
	return id, w.Interrupt(id) == nil
}
