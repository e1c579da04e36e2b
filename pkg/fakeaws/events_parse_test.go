package fakeaws_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
)

// drainParsed receives and deletes everything visible on the interruption
// queue and parses each body as the interruption controller does.
func drainParsed(t *testing.T, e *env) []messages.Message {
	t.Helper()
	url := queueURL(t, e, "interruptions")
	var out []messages.Message
	for {
		msgs := receive(t, e, url, 10, 0)
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			out = append(out, messages.Parse(aws.ToString(m.Body)))
			if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPublishedEventsParseAsTheProductReadsThem feeds every event the
// simulated EventBridge publishes (rebalance, AWS Health scheduled change,
// spot warning, state changes) through the product's own parser: a field
// the fake names differently from the schema the parser reads would turn
// an event into KindIgnored, or lose its instance or deadline, here.
func TestPublishedEventsParseAsTheProductReadsThem(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	id := launched(e.fleet(t, lt, "spot", "price-capacity-optimized", 1, "m5.large"))[0]
	e.world.Tick()
	for _, m := range drainParsed(t, e) {
		// pending and running: state changes the handler reads and ignores.
		if m.Kind == messages.KindIgnored && m.Ignored == nil {
			t.Fatalf("ignored without a reason: %+v", m)
		}
	}

	start := epoch.Add(72 * time.Hour)
	if err := e.world.ScheduleChange(id, start); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	warnedAt := e.clock.Now()
	if err := e.world.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(fakeaws.InterruptionNotice)
	got := drainParsed(t, e)

	var kinds []messages.Kind
	for _, m := range got {
		kinds = append(kinds, m.Kind)
		if m.Kind == messages.KindIgnored {
			t.Fatalf("the product ignores the fake's %q (%s): %+v", m.DetailType, m.Source, m.Ignored)
		}
		if !slices.Equal(m.InstanceIDs, []string{id}) || m.Region != "us-east-1" || m.ID == "" || m.Time.IsZero() {
			t.Errorf("%s: instances %v region %q id %q time %v", m.Kind, m.InstanceIDs, m.Region, m.ID, m.Time)
		}
		switch m.Kind {
		case messages.KindScheduledChange:
			if !m.Deadline.Equal(start) || m.EventTypeCode != "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED" {
				t.Errorf("scheduled change: deadline %v (want %v) type %q", m.Deadline, start, m.EventTypeCode)
			}
		case messages.KindSpotInterruption:
			if want := warnedAt.Add(messages.SpotNotice); !m.Deadline.Equal(want) || m.Action != "terminate" {
				t.Errorf("spot warning: deadline %v (want %v) action %q", m.Deadline, want, m.Action)
			}
		case messages.KindInstanceTerminated:
			if m.State != "shutting-down" && m.State != "terminated" {
				t.Errorf("state change to %q", m.State)
			}
		}
	}
	want := []messages.Kind{messages.KindScheduledChange, messages.KindRebalance, messages.KindSpotInterruption,
		messages.KindInstanceTerminated, messages.KindInstanceTerminated}
	if !slices.Equal(kinds, want) {
		t.Fatalf("parsed kinds %v, want %v", kinds, want)
	}
}
