// Package budget is the one place disruption budgets are evaluated: how many
// of a NodePool's nodes may be disrupted at once for a reason (Empty,
// Drifted, Expired, Underutilized) at a given time. Counts and percentages
// (rounded up), cron windows with a duration (UTC), reasons; the most
// restrictive active budget wins and a budget that cannot be parsed allows
// nothing.
//
// It is a leaf of pkg/disruption so that pkg/lifecycle can use it without an
// import cycle. It takes plain values and a time; it must not import
// client-go clients, controller-runtime or the AWS SDK.
package budget
