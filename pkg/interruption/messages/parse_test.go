package messages

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// Bodies as EventBridge delivers them to SQS; shapes follow the AWS
// documentation's samples (ids and times changed).
const (
	spotWarning = `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate"}}`
	spotStop    = `{"version":"0","id":"2e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"stop"}}`
	spotHib     = `{"version":"0","id":"3e5527d7","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":[],"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"hibernate"}}`
	spotNoTime  = `{"version":"0","id":"4e5527d7","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","region":"us-east-1","detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate"}}`
	spotByARN   = `{"version":"0","id":"5e5527d7","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0123456789abcdef0"],"detail":{"instance-action":"terminate"}}`
	spotNoID    = `{"version":"0","id":"6e5527d7","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":[],"detail":{"instance-action":"terminate"}}`
	spotBadID   = `{"version":"0","id":"7e5527d7","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","detail":{"instance-id":"i-ZZZ; DROP","instance-action":"terminate"}}`
	spotNull    = `{"version":"0","id":"8e5527d7","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-03-01T10:00:00Z","detail":null}`
	spotArray   = `{"version":"0","id":"9e5527d7","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-03-01T10:00:00Z","detail":["i-0b662ef9931388ba0"]}`

	rebalanceRec = `{"version":"0","id":"5d5555d5-dd55-5555-5555-5555dd55d55d","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","account":"123456789012","time":"2026-03-01T09:58:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0"}}`

	stateTmpl = `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012","time":"2026-03-01T11:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],"detail":{"instance-id":"i-abcd1111","state":"STATE"}}`

	healthRetire   = `{"version":"0","id":"7fb65329-1628-4cf3-a740-95fg457h1402","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-03-01T06:27:57Z","region":"us-east-1","resources":["i-12345678","i-0123456789abcdef0"],"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_1","service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange","eventScopeCode":"ACCOUNT_SPECIFIC","communicationId":"abc123","startTime":"Sun, 15 Mar 2026 15:10:09 GMT","endTime":"Sun, 15 Mar 2026 17:10:09 GMT","lastUpdatedTime":"Sun, 01 Mar 2026 06:27:57 GMT","statusCode":"upcoming","eventRegion":"us-east-1","eventDescription":[{"language":"en_US","latestDescription":"EC2 has detected degradation of the underlying hardware hosting your instances."}],"affectedEntities":[{"entityValue":"i-12345678","tags":{"stage":"prod"}},{"entityValue":"i-0123456789abcdef0","status":"PENDING"},{"entityValue":"i-12345678"},{"entityValue":"vol-0123456789abcdef0"}]}}`
	healthOldShape = `{"version":"0","id":"7fb65329-2","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-03-01T06:27:57Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0123456789abcdef0"],"detail":{"eventArn":"arn:aws:health:region::event/id","service":"EC2","eventTypeCode":"AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":"2026-03-02T00:00:00Z"}}`
	healthNoStart  = `{"version":"0","id":"7fb65329-3","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-03-01T06:27:57Z","region":"us-east-1","resources":[],"detail":{"service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_STOP_SCHEDULED","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-0123456789abcdef0"}]}}`
	healthIssue    = `{"version":"0","id":"7fb65329-4","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-03-01T06:27:57Z","region":"us-east-1","resources":[],"detail":{"service":"EC2","eventTypeCode":"AWS_EC2_OPERATIONAL_ISSUE","eventTypeCategory":"issue","affectedEntities":[{"entityValue":"i-0123456789abcdef0"}]}}`
	healthEBS      = `{"version":"0","id":"7fb65329-5","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-03-01T06:27:57Z","region":"us-east-1","resources":["vol-0123456789abcdef0"],"detail":{"service":"EBS","eventTypeCode":"AWS_EBS_VOLUME_LOST","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"vol-0123456789abcdef0"}]}}`
	healthNoInst   = `{"version":"0","id":"7fb65329-6","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-03-01T06:27:57Z","region":"us-east-1","resources":[],"detail":{"service":"EC2","eventTypeCode":"AWS_EC2_DEDICATED_HOST_NETWORK_MAINTENANCE_SCHEDULED","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"h-0123456789abcdef0"}]}}`
	healthAbuse    = `{"version":"0","id":"7fb65329-7","detail-type":"AWS Health Abuse Event","source":"aws.health","account":"123456789012","time":"2026-03-01T06:27:57Z","region":"us-east-1","resources":[],"detail":{"service":"ABUSE"}}`

	// The EC2 user guide's "Instance interruption warning" of an
	// interruptible capacity reservation (ids and times changed).
	reservationWarning = `{"version":"0","id":"b1","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate","instance-termination-time":"2026-03-01T10:02:30Z","azId":"use1-az1"}}`
	reservationNoEnd   = `{"version":"0","id":"b3","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0b662ef9931388ba0"],"detail":{"azId":"use1-az1"}}`
	reservationNoID    = `{"version":"0","id":"b4","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":[],"detail":{"instance-action":"terminate","instance-termination-time":"2026-03-01T10:02:00Z"}}`
	asgLifecycle       = `{"version":"0","id":"b2","detail-type":"EC2 Instance-terminate Lifecycle Action","source":"aws.autoscaling","account":"123456789012","time":"2026-03-01T10:00:00Z","region":"us-east-1","resources":[],"detail":{"EC2InstanceId":"i-0b662ef9931388ba0"}}`
	sqsTestEvent       = `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-03-01T10:00:00.000Z","Bucket":"b","RequestId":"r","HostId":"h"}`
)

func snsWrap(inner string) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(inner)
	return `{"Type":"Notification","MessageId":"22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324","TopicArn":"arn:aws:sns:us-east-1:123456789012:interruptions","Message":"` + esc + `","Timestamp":"2026-03-01T10:00:01.000Z","SignatureVersion":"1"}`
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Message
	}{
		{name: "spot warning, terminate", body: spotWarning, want: Message{
			Kind: KindSpotInterruption, ID: "1e5527d7-bb36-4607-3370-4164db56a40e", Source: SourceEC2, DetailType: DetailSpotInterruption,
			Time: at("2026-03-01T10:00:00Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0b662ef9931388ba0"}, Action: ActionTerminate, Deadline: at("2026-03-01T10:02:00Z"),
		}},
		{name: "spot warning, stop", body: spotStop, want: Message{
			Kind: KindSpotInterruption, ID: "2e5527d7-bb36-4607-3370-4164db56a40e", Source: SourceEC2, DetailType: DetailSpotInterruption,
			Time: at("2026-03-01T10:00:00Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0b662ef9931388ba0"}, Action: ActionStop, Deadline: at("2026-03-01T10:02:00Z"),
		}},
		{name: "spot warning, hibernate: no notice period", body: spotHib, want: Message{
			Kind: KindSpotInterruption, ID: "3e5527d7", Source: SourceEC2, DetailType: DetailSpotInterruption,
			Time: at("2026-03-01T10:00:00Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0b662ef9931388ba0"}, Action: ActionHibernate, Deadline: at("2026-03-01T10:00:00Z"),
		}},
		{name: "spot warning without time: deadline left to the receiver", body: spotNoTime, want: Message{
			Kind: KindSpotInterruption, ID: "4e5527d7", Source: SourceEC2, DetailType: DetailSpotInterruption,
			Region: "us-east-1", Account: "123456789012", InstanceIDs: []string{"i-0b662ef9931388ba0"}, Action: ActionTerminate,
		}},
		{name: "spot warning naming the instance only in resources", body: spotByARN, want: Message{
			Kind: KindSpotInterruption, ID: "5e5527d7", Source: SourceEC2, DetailType: DetailSpotInterruption,
			Time: at("2026-03-01T10:00:00Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0123456789abcdef0"}, Action: ActionTerminate, Deadline: at("2026-03-01T10:02:00Z"),
		}},
		{name: "rebalance recommendation", body: rebalanceRec, want: Message{
			Kind: KindRebalance, ID: "5d5555d5-dd55-5555-5555-5555dd55d55d", Source: SourceEC2, DetailType: DetailRebalance,
			Time: at("2026-03-01T09:58:00Z"), Region: "us-east-1", Account: "123456789012", InstanceIDs: []string{"i-0b662ef9931388ba0"},
		}},
		{name: "AWS Health retirement: affected instances, de-duplicated, volumes left out", body: healthRetire, want: Message{
			Kind: KindScheduledChange, ID: "7fb65329-1628-4cf3-a740-95fg457h1402", Source: SourceHealth, DetailType: DetailHealth,
			Time: at("2026-03-01T06:27:57Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-12345678", "i-0123456789abcdef0"}, EventTypeCode: "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			Deadline: at("2026-03-15T15:10:09Z"),
		}},
		{name: "AWS Health without affectedEntities: instances from resources, RFC 3339 start", body: healthOldShape, want: Message{
			Kind: KindScheduledChange, ID: "7fb65329-2", Source: SourceHealth, DetailType: DetailHealth,
			Time: at("2026-03-01T06:27:57Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0123456789abcdef0"}, EventTypeCode: "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED",
			Deadline: at("2026-03-02T00:00:00Z"),
		}},
		{name: "AWS Health without a start time: no deadline", body: healthNoStart, want: Message{
			Kind: KindScheduledChange, ID: "7fb65329-3", Source: SourceHealth, DetailType: DetailHealth,
			Time: at("2026-03-01T06:27:57Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0123456789abcdef0"}, EventTypeCode: "AWS_EC2_INSTANCE_STOP_SCHEDULED",
		}},
		{name: "capacity reservation warning: terminated at instance-termination-time", body: reservationWarning, want: Message{
			Kind: KindCapacityReservationInterruption, ID: "b1", Source: SourceEC2, DetailType: DetailCapacityReservationInterruption,
			Time: at("2026-03-01T10:00:00Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0b662ef9931388ba0"}, Action: ActionTerminate, Deadline: at("2026-03-01T10:02:30Z"),
		}},
		{name: "capacity reservation warning without a termination time: two minutes on, the instance from resources", body: reservationNoEnd, want: Message{
			Kind: KindCapacityReservationInterruption, ID: "b3", Source: SourceEC2, DetailType: DetailCapacityReservationInterruption,
			Time: at("2026-03-01T10:00:00Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0b662ef9931388ba0"}, Action: ActionTerminate, Deadline: at("2026-03-01T10:02:00Z"),
		}},
		{name: "SNS-wrapped spot warning", body: snsWrap(spotWarning), want: Message{
			Kind: KindSpotInterruption, ID: "1e5527d7-bb36-4607-3370-4164db56a40e", Source: SourceEC2, DetailType: DetailSpotInterruption,
			Time: at("2026-03-01T10:00:00Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-0b662ef9931388ba0"}, Action: ActionTerminate, Deadline: at("2026-03-01T10:02:00Z"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.body)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseStateChanges(t *testing.T) {
	tests := []struct {
		state string
		kind  Kind
	}{
		{"stopping", KindInstanceStopping},
		{"stopped", KindInstanceStopped},
		{"shutting-down", KindInstanceTerminated},
		{"terminated", KindInstanceTerminated},
	}
	for _, tt := range tests {
		got := Parse(strings.Replace(stateTmpl, "STATE", tt.state, 1))
		want := Message{Kind: tt.kind, ID: "7bf73129-1428-4cd3-a780-95db273d1602", Source: SourceEC2, DetailType: DetailStateChange,
			Time: at("2026-03-01T11:00:00Z"), Region: "us-east-1", Account: "123456789012",
			InstanceIDs: []string{"i-abcd1111"}, State: tt.state, Deadline: at("2026-03-01T11:00:00Z")}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("state %s: Parse =\n%+v\nwant\n%+v", tt.state, got, want)
		}
	}
}

func TestParseIgnored(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		reason IgnoreReason
		detail string // a substring of Ignored.Detail
	}{
		{"empty body", "", IgnoredMalformed, "not a JSON object"},
		{"not JSON", "spot!", IgnoredMalformed, "not a JSON object"},
		{"a JSON array", `[1,2]`, IgnoredMalformed, "not a JSON object"},
		{"JSON without source", `{"id":"x","detail":{}}`, IgnoredMalformed, "no source or detail-type"},
		{"an S3 test event", sqsTestEvent, IgnoredMalformed, "no source or detail-type"},
		{"SNS wrapping garbage", `{"Type":"Notification","Message":"nope"}`, IgnoredMalformed, "not a JSON object"},
		{"SNS wrapping SNS", snsWrap(snsWrap(spotWarning)), IgnoredMalformed, "no source or detail-type"},
		{"spot warning without instance", spotNoID, IgnoredMalformed, "without a valid instance-id"},
		{"spot warning with a bad instance id", spotBadID, IgnoredMalformed, "without a valid instance-id"},
		{"spot warning with null detail", spotNull, IgnoredMalformed, "no detail"},
		{"spot warning with array detail", spotArray, IgnoredMalformed, "detail is not an object"},
		{"state change to pending", strings.Replace(stateTmpl, "STATE", "pending", 1), IgnoredNotActionable, `changed state to "pending"`},
		{"state change to running", strings.Replace(stateTmpl, "STATE", "running", 1), IgnoredNotActionable, `changed state to "running"`},
		{"state change without state", strings.Replace(stateTmpl, "STATE", "", 1), IgnoredMalformed, "without a state"},
		{"health issue, not a scheduled change", healthIssue, IgnoredNotActionable, `category "issue"`},
		{"health event for EBS", healthEBS, IgnoredNotActionable, `service "EBS"`},
		{"health event naming no instance", healthNoInst, IgnoredNotActionable, "names no EC2 instance"},
		{"health abuse event", healthAbuse, IgnoredUnknownEvent, "AWS Health Abuse Event"},
		{"capacity reservation warning without instance", reservationNoID, IgnoredMalformed, "capacity reservation interruption warning without a valid instance-id"},
		{"auto scaling lifecycle", asgLifecycle, IgnoredUnknownEvent, "aws.autoscaling"},
		{"too large", `{"source":"aws.ec2","x":"` + strings.Repeat("a", maxBody) + `"}`, IgnoredMalformed, "larger than SQS allows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.body)
			if got.Kind != KindIgnored || got.Ignored == nil {
				t.Fatalf("Parse = %+v, want ignored", got)
			}
			if got.Ignored.Reason != tt.reason || !strings.Contains(got.Ignored.Detail, tt.detail) {
				t.Fatalf("ignored %q (%s), want %q containing %q", got.Ignored.Reason, got.Ignored.Detail, tt.reason, tt.detail)
			}
			if len(got.InstanceIDs) != 0 || !got.Deadline.IsZero() {
				t.Fatalf("an ignored message carries instances %v or deadline %v", got.InstanceIDs, got.Deadline)
			}
		})
	}
}

func TestDeadlineOr(t *testing.T) {
	recv := at("2026-03-01T12:00:00Z")
	tests := []struct {
		name string
		body string
		want time.Time
	}{
		{"from the event's time", spotWarning, at("2026-03-01T10:02:00Z")},
		{"spot without time: two minutes after receipt", spotNoTime, recv.Add(SpotNotice)},
		{"capacity reservation warning without time: two minutes after receipt",
			strings.Replace(reservationNoEnd, `"time":"2026-03-01T10:00:00Z",`, "", 1), recv.Add(SpotNotice)},
		{"rebalance has none", rebalanceRec, time.Time{}},
		{"scheduled change without start has none", healthNoStart, time.Time{}},
		{"state change: the event's time", strings.Replace(stateTmpl, "STATE", "stopping", 1), at("2026-03-01T11:00:00Z")},
	}
	for _, tt := range tests {
		if got := Parse(tt.body).DeadlineOr(recv); !got.Equal(tt.want) {
			t.Errorf("%s: DeadlineOr = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIsInstanceID(t *testing.T) {
	for s, want := range map[string]bool{
		"i-0123456789abcdef0": true, "i-12345678": true, "i-0123456789ABCDEF0": false, "i-123": false,
		"vol-0123456789abcdef0": false, "": false, "i-0123456789abcdef0 ": false, "i-1234567g": false,
	} {
		if got := IsInstanceID(s); got != want {
			t.Errorf("IsInstanceID(%q) = %v, want %v", s, got, want)
		}
	}
}
