package fakeaws_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

type bridgeEvent struct {
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// drain receives and deletes everything visible on the interruption queue.
func drain(t *testing.T, e *env) []bridgeEvent {
	t.Helper()
	url := queueURL(t, e, "interruptions")
	var out []bridgeEvent
	for {
		msgs := receive(t, e, url, 10, 0)
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			var ev bridgeEvent
			if err := json.Unmarshal([]byte(*m.Body), &ev); err != nil {
				t.Fatalf("message is not an EventBridge event: %v: %s", err, *m.Body)
			}
			out = append(out, ev)
			if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func detail(t *testing.T, ev bridgeEvent) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSpotInterruption(t *testing.T) {
	e := newEnv(t)
	var kinds []fakeaws.EventKind
	e.world.Subscribe(func(ev fakeaws.Event) { kinds = append(kinds, ev.Kind) })
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	id := launched(e.fleet(t, lt, "spot", "price-capacity-optimized", 1, "m5.large"))[0]
	inst, _ := e.world.Instance(id)
	e.world.Tick()
	drain(t, e) // pending / running state changes
	capBefore := spare(e, inst)

	e.clock.Step(time.Minute)
	if err := e.world.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	evs := drain(t, e)
	if len(evs) != 2 || evs[0].DetailType != "EC2 Instance Rebalance Recommendation" || evs[1].DetailType != "EC2 Spot Instance Interruption Warning" {
		t.Fatalf("events at interruption: %+v", evs)
	}
	warn := evs[1]
	d := detail(t, warn)
	if d["instance-id"] != id || d["instance-action"] != "terminate" || warn.Source != "aws.ec2" || warn.Region != "us-east-1" ||
		warn.Time != epoch.Add(time.Minute).Format(time.RFC3339) || len(warn.Resources) != 1 || warn.Resources[0] != "arn:aws:ec2:us-east-1:123456789012:instance/"+id {
		t.Fatalf("warning %+v detail %v", warn, d)
	}

	e.clock.Step(noticeLess(time.Second))
	if in, _ := e.world.Instance(id); in.State != "running" {
		t.Fatalf("1s before the deadline the instance is %s", in.State)
	}
	e.clock.Step(time.Second)
	out, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Reservations[0].Instances[0]
	if got.State.Name != "terminated" || aws.ToString(got.StateReason.Code) != "Server.SpotInstanceTermination" {
		t.Fatalf("at 2m: state %s reason %v", got.State.Name, aws.ToString(got.StateReason.Code))
	}
	var states []any
	for _, ev := range drain(t, e) {
		if ev.DetailType != "EC2 Instance State-change Notification" {
			t.Fatalf("unexpected %s", ev.DetailType)
		}
		states = append(states, detail(t, ev)["state"])
	}
	if len(states) != 2 || states[0] != "shutting-down" || states[1] != "terminated" {
		t.Fatalf("state changes %v", states)
	}
	if spare(e, inst) != capBefore+1 {
		t.Fatalf("capacity not returned: %d → %d", capBefore, spare(e, inst))
	}
	want := []fakeaws.EventKind{"Launched", "Running", "Interrupted", "Terminating", "Terminated"}
	if len(kinds) != len(want) {
		t.Fatalf("subscriber saw %v", kinds)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("subscriber saw %v, want %v", kinds, want)
		}
	}
	if err := e.world.Interrupt(id); err == nil {
		t.Fatalf("interrupting a terminated instance should fail")
	}
}

// noticeLess is the interruption notice period less d.
func noticeLess(d time.Duration) time.Duration { return fakeaws.InterruptionNotice - d }

func spare(e *env, in fakeaws.Instance) int {
	for _, p := range e.world.Pools() {
		if p.InstanceType == in.Type && p.Zone == in.Zone && p.CapacityType == in.CapacityType {
			return p.Spare
		}
	}
	return -1
}

func TestRebalanceAndScheduledChange(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	id := launched(e.fleet(t, lt, "on-demand", "", 1, "m5.large"))[0]
	e.world.Tick()
	drain(t, e)
	if err := e.world.Interrupt(id); err == nil {
		t.Fatalf("on-demand instances cannot be spot-interrupted")
	}
	if err := e.world.Rebalance(id); err != nil {
		t.Fatal(err)
	}
	start := epoch.Add(72 * time.Hour)
	if err := e.world.ScheduleChange(id, start); err != nil {
		t.Fatal(err)
	}
	evs := drain(t, e)
	if len(evs) != 2 || evs[0].DetailType != "EC2 Instance Rebalance Recommendation" || evs[1].DetailType != "AWS Health Event" {
		t.Fatalf("events %+v", evs)
	}
	h := detail(t, evs[1])
	entities, _ := h["affectedEntities"].([]any)
	if h["service"] != "EC2" || h["eventTypeCategory"] != "scheduledChange" || evs[1].Source != "aws.health" ||
		len(entities) != 1 || entities[0].(map[string]any)["entityValue"] != id || h["startTime"] != "Wed, 02 Dec 2026 12:00:00 GMT" {
		t.Fatalf("health detail %v", h)
	}
	// The fields the current EventBridge schema added, with the values an
	// account-specific, upcoming retirement has.
	want := map[string]string{
		"eventScopeCode": "ACCOUNT_SPECIFIC", "statusCode": "upcoming", "eventRegion": "us-east-1",
		"affectedAccount": "123456789012", "page": "1", "totalPages": "1",
		"lastUpdatedTime": "Sun, 29 Nov 2026 12:00:00 GMT", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("detail.%s = %v, want %s", k, h[k], v)
		}
	}
	arn, _ := h["eventArn"].(string)
	if !strings.HasPrefix(arn, "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_") {
		t.Errorf("eventArn %s", arn)
	}
	if c, _ := h["communicationId"].(string); !strings.HasSuffix(c, "-1") || len(c) < 10 {
		t.Errorf("communicationId %q", c)
	}
	if in, _ := e.world.Instance(id); in.State != "running" {
		t.Fatalf("a scheduled change must not stop the instance by itself: %s", in.State)
	}
}

func TestInterruptRandomPicksRunningSpot(t *testing.T) {
	e := newEnv(t)
	if _, ok := e.world.InterruptRandom(); ok {
		t.Fatal("interrupted something in an empty world")
	}
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	e.fleet(t, lt, "on-demand", "", 2, "m5.large")
	spot := launched(e.fleet(t, lt, "spot", "price-capacity-optimized", 2, "m5.large"))
	e.world.Tick()
	seen := map[string]bool{}
	for i := 0; i < 2; i++ {
		id, ok := e.world.InterruptRandom()
		if !ok || seen[id] || (id != spot[0] && id != spot[1]) {
			t.Fatalf("round %d interrupted %q (ok %v); spot instances are %v", i, id, ok, spot)
		}
		seen[id] = true
	}
	if id, ok := e.world.InterruptRandom(); ok {
		t.Fatalf("interrupted %s although every spot instance already has a notice", id)
	}
}
