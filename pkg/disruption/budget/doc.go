// Package budget is the one place disruption budgets are evaluated and
// counted against: how many of a NodePool's nodes may start disrupting at
// once for a reason (Empty, Drifted, Expired, Underutilized, Rebalance) at a
// given time. Count takes a pool's Ledger from its NodeClaims (initialized
// nodes; those deleting, marked for disruption or not Ready are
// disrupting); Allowed and Allowance measure the budgets against it:
// counts and percentages (rounded up), cron windows with a duration (UTC),
// reasons; the most restrictive active budget wins and a budget that cannot
// be parsed allows nothing. The planner, the interruption handler and
// explain all ask it; none counts on its own.
//
// It is a leaf of pkg/disruption (it needs only apis/v1 and pkg/lifecycle).
// It takes plain values and a time; it must not import client-go clients,
// controller-runtime or the AWS SDK.
package budget
