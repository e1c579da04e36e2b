package iampolicy

// batchPermission: SQS authorizes its batch calls with the permission of
// the single call; the batch actions cannot be granted on their own
// (Amazon SQS Developer Guide, "Amazon SQS batch actions").
var batchPermission = map[string]string{
	"sqs:SendMessageBatch":             "sqs:SendMessage",
	"sqs:DeleteMessageBatch":           "sqs:DeleteMessage",
	"sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
}

// PermissionFor is the IAM action AWS checks for an API call named
// "service:Operation".
func PermissionFor(call string) string {
	if p, ok := batchPermission[call]; ok {
		return p
	}
	return call
}
