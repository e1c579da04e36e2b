// Package iampolicy evaluates an IAM identity policy document against one
// request, as AWS does for a caller with that single policy: an explicit
// Deny wins, else any Allow allows, else the request is implicitly denied.
//
// It understands what least-privilege controller policies use: Action and
// NotAction with * and ? wildcards (case-insensitive), Resource and
// NotResource ARNs with wildcards, and the condition operators StringEquals,
// StringNotEquals, StringLike, StringNotLike, StringEqualsIgnoreCase,
// ArnEquals, ArnLike, ArnNotEquals, ArnNotLike, Bool and Null, with the
// ForAllValues:/ForAnyValue: set prefixes and the IfExists suffix. Condition
// keys (aws:RequestTag/…, aws:ResourceTag/…, aws:TagKeys,
// aws:RequestedRegion, ec2:CreateAction, iam:PassedToService, …) are
// matched case-insensitively; values are the caller's. Policy variables,
// numeric, date and IP operators are not supported and are refused by
// Parse, so a policy never silently evaluates differently from AWS.
//
// The package is pure: it imports only the standard library. The simulated
// AWS (pkg/fakeaws) builds the requests — action, the ARNs it constructs
// for each resource a call touches, and the condition context — and turns
// a denial into the service's error.
package iampolicy
