package iampolicy

import "testing"

func TestPermissionFor(t *testing.T) {
	for call, want := range map[string]string{
		"sqs:DeleteMessageBatch":           "sqs:DeleteMessage",
		"sqs:SendMessageBatch":             "sqs:SendMessage",
		"sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
		"sqs:ReceiveMessage":               "sqs:ReceiveMessage",
		"ec2:CreateFleet":                  "ec2:CreateFleet",
	} {
		if got := PermissionFor(call); got != want {
			t.Errorf("PermissionFor(%s) = %s, want %s", call, got, want)
		}
	}
}
