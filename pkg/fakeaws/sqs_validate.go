package fakeaws

import (
	"encoding/json"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SQS limits, from the SQS API reference (CreateQueue, SendMessage,
// SendMessageBatch, ChangeMessageVisibility) and the developer guide's
// message-attribute rules.
const (
	maxQueueNameLen      = 80
	maxBatchEntries      = 10
	maxBatchIDLen        = 80
	maxBatchPayload      = 1 << 20 // the sum of a batch's message sizes
	maxMessageAttributes = 10
	maxAttrNameBytes     = 255 // "must be shorter than 256 bytes"
	maxAttrTypeBytes     = 255
	maxVisibility        = 43200 // 12 hours
	maxDelaySeconds      = 900
	purgeInterval        = 60 // seconds between PurgeQueue calls
	recreateInterval     = 60 // seconds before a deleted queue's name is free
	maxNumberDigits      = 38
)

var (
	queueNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
	batchIDRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
	attrNameRE  = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	numberRE    = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)
)

// SQS error constructors: the JSON __type, the query-compatible code SQS
// sends in X-Amzn-Query-Error (the one SDKs report as the error code), and
// the message.
func errInvalidParameter(format string, args ...any) *sqsError {
	return sqsErr("InvalidParameterValueException", "InvalidParameterValue;Sender", format, args...)
}

func errMissingParameter(name string) *sqsError {
	return sqsErr("MissingParameter", "MissingParameter;Sender", "The request must contain the parameter %s.", name)
}

func errQueueMissing() *sqsError {
	return sqsErr("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue;Sender", "The specified queue does not exist.")
}

func errAttrName(name string) *sqsError {
	return sqsErr("InvalidAttributeName", "InvalidAttributeName;Sender", "Unknown Attribute %s.", name)
}

func errAttrValue(name, reason string) *sqsError {
	msg := "Invalid value for the parameter " + name + "."
	if reason != "" {
		msg += " Reason: " + reason
	}
	return sqsErr("InvalidAttributeValue", "InvalidAttributeValue;Sender", "%s", msg)
}

// checkQueueName applies the CreateQueue name rules. FIFO queues (".fifo")
// are not simulated and are refused as such.
func checkQueueName(name string, attrs map[string]string) error {
	base, fifo := strings.CutSuffix(name, ".fifo")
	if name == "" {
		return errMissingParameter("QueueName")
	}
	if len(name) > maxQueueNameLen || !queueNameRE.MatchString(base) {
		return errInvalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	if fifo || attrs["FifoQueue"] == "true" {
		return sqsErr("UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation;Sender", "FIFO queues are not simulated by fakeaws")
	}
	return nil
}

// intRange checks an integer attribute.
func intRange(lo, hi int) func(string, *World) string {
	return func(v string, _ *World) string {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return ""
		}
		return "ok"
	}
}

// settableAttrs are the attributes CreateQueue and SetQueueAttributes take,
// each with its check: "ok", or "" for an invalid value, or a reason.
var settableAttrs = map[string]func(v string, w *World) string{
	"DelaySeconds":                  intRange(0, maxDelaySeconds),
	"MaximumMessageSize":            intRange(1024, 1<<20),
	"MessageRetentionPeriod":        intRange(60, 1209600),
	"ReceiveMessageWaitTimeSeconds": intRange(0, 20),
	"VisibilityTimeout":             intRange(0, maxVisibility),
	"KmsDataKeyReusePeriodSeconds":  intRange(60, 86400),
	"KmsMasterKeyId":                func(string, *World) string { return "ok" },
	"SqsManagedSseEnabled": func(v string, _ *World) string {
		if v == "true" || v == "false" {
			return "ok"
		}
		return ""
	},
	"Policy": func(v string, _ *World) string {
		if v == "" || json.Valid([]byte(v)) && strings.HasPrefix(strings.TrimSpace(v), "{") {
			return "ok"
		}
		return ""
	},
	"RedrivePolicy": func(v string, w *World) string {
		if v == "" {
			return "ok"
		}
		target, n, err := parseRedrive(v)
		switch {
		case err != nil:
			return "Invalid JSON: " + err.Error()
		case n < 1 || n > 1000:
			return "Invalid value for maxReceiveCount: " + strconv.Itoa(n) + ", valid values are from 1 to 1000 both inclusive."
		case w.queueByARN(target) == nil:
			return "Dead letter target does not exist."
		}
		return "ok"
	},
	"RedriveAllowPolicy": func(v string, _ *World) string {
		if v == "" {
			return "ok"
		}
		var p struct {
			Permission string `json:"redrivePermission"`
		}
		if json.Unmarshal([]byte(v), &p) != nil {
			return ""
		}
		switch p.Permission {
		case "allowAll", "denyAll", "byQueue":
			return "ok"
		}
		return ""
	},
}

// fifoAttrs exist only on FIFO queues, which the fake does not simulate.
var fifoAttrs = map[string]bool{"FifoQueue": true, "ContentBasedDeduplication": true, "DeduplicationScope": true, "FifoThroughputLimit": true}

// readOnlyAttrs are the attributes GetQueueAttributes reports but nobody sets.
var readOnlyAttrs = map[string]bool{
	"ApproximateNumberOfMessages": true, "ApproximateNumberOfMessagesDelayed": true,
	"ApproximateNumberOfMessagesNotVisible": true, "CreatedTimestamp": true,
	"LastModifiedTimestamp": true, "QueueArn": true,
}

// checkQueueAttrs validates attributes for CreateQueue and SetQueueAttributes.
func (w *World) checkQueueAttrs(attrs map[string]string) error {
	for _, k := range sortedKeys(attrs) {
		check, ok := settableAttrs[k]
		if !ok {
			if fifoAttrs[k] {
				return sqsErr("UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation;Sender", "FIFO queues are not simulated by fakeaws (attribute %s)", k)
			}
			return errAttrName(k)
		}
		switch r := check(attrs[k], w); r {
		case "ok":
		case "":
			return errAttrValue(k, "")
		default:
			return errAttrValue(k, r)
		}
	}
	return nil
}

// sqsText reports whether s has only the characters SQS takes in a message
// body or a string attribute: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to
// #xFFFD | #x10000 to #x10FFFF, which is XML's set.
func sqsText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !xmlChar(r) {
			return false
		}
	}
	return true
}

func errContents() *sqsError {
	return sqsErr("InvalidMessageContents", "InvalidMessageContents;Sender",
		"Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF")
}

// checkMessageAttrs applies the message-attribute rules and returns the
// bytes the attributes add to the message size (names, types and values).
func checkMessageAttrs(attrs map[string]jsonAttr) (int, error) {
	if len(attrs) > maxMessageAttributes {
		return 0, errInvalidParameter("Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), maxMessageAttributes)
	}
	size := 0
	for _, name := range sortedAttrNames(attrs) {
		a := attrs[name]
		if err := checkAttrName(name); err != nil {
			return 0, err
		}
		base, _, _ := strings.Cut(a.DataType, ".")
		switch {
		case a.DataType == "":
			return 0, errInvalidParameter("The message attribute '%s' must contain non-empty message attribute type.", name)
		case len(a.DataType) > maxAttrTypeBytes:
			return 0, errInvalidParameter("Message (user) attribute types must be shorter than 256 Bytes.")
		case base != "String" && base != "Number" && base != "Binary":
			return 0, errInvalidParameter("The type of message (user) attribute '%s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.", name)
		case !sqsText(a.DataType):
			return 0, errContents()
		}
		if base == "Binary" {
			if len(a.BinaryValue) == 0 {
				return 0, errInvalidParameter("The message attribute '%s' with type 'Binary' must use field 'Binary'.", name)
			}
			size += len(name) + len(a.DataType) + len(a.BinaryValue)
			continue
		}
		switch {
		case a.StringValue == "":
			return 0, errInvalidParameter("The message attribute '%s' must contain non-empty message attribute value for message attribute type '%s'.", name, a.DataType)
		case !sqsText(a.StringValue):
			return 0, errContents()
		case base == "Number" && !validNumber(a.StringValue):
			return 0, errInvalidParameter("Can't cast the value of message (user) attribute '%s' to a number.", name)
		}
		size += len(name) + len(a.DataType) + len(a.StringValue)
	}
	return size, nil
}

func sortedAttrNames(m map[string]jsonAttr) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sortStrings(ks)
	return ks
}

func checkAttrName(name string) error {
	lower := strings.ToLower(name)
	switch {
	case name == "":
		return errInvalidParameter("The request must contain non-empty message attribute name.")
	case len(name) > maxAttrNameBytes:
		return errInvalidParameter("Message (user) attribute name must be shorter than 256 Bytes.")
	case !attrNameRE.MatchString(name):
		return errInvalidParameter("Message (user) attributes name can only contain upper and lower score characters, digits, periods, hyphens and underscores.")
	case strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon."):
		return errInvalidParameter("Message (user) attribute name '%s' is reserved: names starting with 'AWS.' or 'Amazon.' are reserved for internal use.", name)
	case strings.HasPrefix(name, ".") || strings.HasSuffix(name, "."):
		return errInvalidParameter("Message (user) attribute name '%s' cannot start or end with '.'.", name)
	case strings.Contains(name, ".."):
		return errInvalidParameter("Message (user) attribute name '%s' cannot contain successive '.' characters.", name)
	}
	return nil
}

// validNumber applies SQS's Number rule: up to 38 significant digits, with
// a magnitude between 10^-128 and 10^+126 (zero is allowed).
func validNumber(s string) bool {
	if !numberRE.MatchString(s) {
		return false
	}
	mant, _, _ := strings.Cut(strings.ToLower(strings.TrimLeft(s, "+-")), "e")
	digits := strings.Trim(strings.ReplaceAll(mant, ".", ""), "0")
	if len(digits) > maxNumberDigits {
		return false
	}
	f, _, err := big.ParseFloat(s, 10, 256, big.ToNearestEven)
	if err != nil {
		return false
	}
	if f.Sign() == 0 {
		return true
	}
	f.Abs(f)
	lo, _, _ := big.ParseFloat("1e-128", 10, 256, big.ToNearestEven)
	hi, _, _ := big.ParseFloat("1e126", 10, 256, big.ToNearestEven)
	return f.Cmp(lo) >= 0 && f.Cmp(hi) <= 0
}

// checkBatchIDs applies SQS's batch rules (1–10 entries, ids of up to 80
// alphanumerics, hyphens and underscores, distinct).
func checkBatchIDs(ids []string) error {
	n := len(ids)
	if n == 0 {
		return sqsErr("EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest;Sender", "There should be at least one entry in the request.")
	}
	if n > maxBatchEntries {
		return sqsErr("TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest;Sender", "Maximum number of entries per request are %d. You have sent %d.", maxBatchEntries, n)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !batchIDRE.MatchString(id) {
			return sqsErr("InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId;Sender",
				"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most %d letters long.", maxBatchIDLen)
		}
		if seen[id] {
			return sqsErr("BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct;Sender", "Id %s repeated.", id)
		}
		seen[id] = true
	}
	return nil
}
