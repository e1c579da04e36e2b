// Package fakeaws is the simulated AWS that Nodesmith's tests, its simulator
// and the end-to-end lab run against: one in-memory World (capacity pools,
// instances, launch templates, subnets, security groups, images, SQS queues,
// SSM parameters, timers) behind one HTTP handler that speaks the real wire
// protocols, so the product's AWS provider is exercised through the real
// aws-sdk-go-v2 clients pointed at it with BaseEndpoint.
//
// # Wire
//
// Server dispatches on X-Amz-Target: "AmazonSQS.*" is SQS (AWS JSON 1.0),
// "AmazonSSM.*" is SSM (AWS JSON 1.1); everything else is EC2 (Query
// protocol: form-encoded POST, 1-based dotted list keys, XML answers with
// lowerCamel elements and <item> list entries, errors as
// <Response><Errors><Error>). Unknown EC2 actions get InvalidAction.
// IAM is the Query protocol too, told from EC2 by its Version form field
// (2010-05-08), with <ActionResponse><ActionResult> answers and
// <ErrorResponse> errors; instance profiles are simulated (create, get,
// list, add and remove a role, tag, delete) over roles that NewWorld
// pre-creates (Options.Roles, and NodeRoleName(ClusterName)) or AddRole
// adds, and GetRole reads them. With Options.EnforceInstanceProfiles,
// CreateFleet refuses a launch template naming a profile IAM lacks, as EC2
// does. SSM answers GetParameter and GetParameters.
//
// The front ends validate as AWS does, with AWS's codes: malformed EC2 ids
// (InvalidInstanceID.Malformed and the AMI, group, subnet and launch
// template equivalents), EC2 tag keys and limits, filter names (a name EC2
// documents but the fake does not simulate is refused as such), SQS queue
// names, queue attributes and their ranges, message bodies, message
// attributes and batches, IAM names, paths and tags against the patterns in
// IAM's model. Every XML value is escaped so that characters XML cannot
// carry become U+FFFD instead of breaking the answer, and a request body
// over MaxRequestBody is refused whole (HTTP 413), never truncated.
// test/conformance checks all of this with botocore, a client nobody here
// wrote. Signatures are not verified. Injected throttling answers EC2
// RequestLimitExceeded (HTTP 503), SQS RequestThrottled and SSM
// ThrottlingException, all of which the SDK retryer treats as throttles.
//
// # Model
//
// A pool is (instance type, zone, capacity type) with a spare count and a
// price. CreateFleet (instant) picks pools per allocation strategy one
// instance at a time, reports per-override errors (InsufficientInstanceCapacity,
// Unsupported, SpotMaxPriceTooLow, InsufficientFreeAddressesInSubnet, launch
// template or AMI not found, architecture mismatch) and quota errors
// (MaxSpotInstanceCountExceeded, VcpuLimitExceeded), and is idempotent per
// ClientToken: the same token with the same parameters gets the first
// answer, with other parameters IdempotentParameterMismatch. Instances boot
// pending → running after BootDelay; terminating goes shutting-down →
// terminated (after ShutdownDelay) and returns the capacity and the address. Terminated instances stay visible for
// TerminatedRetention.
//
// Interrupt publishes a rebalance recommendation and the spot interruption
// warning and terminates the instance InterruptionNotice (2m) later;
// Rebalance and ScheduleChange publish their events; every state change
// publishes an "EC2 Instance State-change Notification". All go, in the
// EventBridge envelope (AWS Health events with the current schema's
// fields), to Options.InterruptionQueue when it is set. SQS queues keep
// messages for their MessageRetentionPeriod and count delayed messages
// apart from those in flight.
//
// # Time
//
// Time comes from Options.Clock. Nothing runs on its own: Tick processes due
// timers at the clock's current time, and every API call ticks first, so a
// test steps a FakeClock and the next call sees the result. Run ticks on a
// real-time ticker for cmd/fake-aws. ReceiveMessage long polling waits in
// real time for at most Options.MaxLongPoll — 20s with the real clock, zero
// (return at once when empty) with an injected clock, because virtual time
// cannot advance while a request blocks.
//
// # In process
//
// Server.InProcess is an aws.HTTPClient that hands each request to the
// handler on the caller's goroutine and returns the complete answer, for
// callers that must not depend on the wall clock or the scheduler (the
// simulator): over loopback TCP, net/http may tear a connection down under
// an answer the SDK is still reading, and the SDK retries the call.
//
// # Faults and counters
//
// InjectThrottle and InjectServerError take an action name — the EC2 Action
// ("CreateFleet"), "sqs:<Operation>", "ssm:<Operation>" or "iam:<Action>",
// or "*" for any — and InjectAccessDenied an "iam:<Action>"; all fail
// that many next calls; SetLatency delays every answer in real time
// (it models the wire). InjectICE closes a pool until a world-clock time.
// Stats counts calls under the same keys, including the failed ones, so a
// test can see how often the SDK retried. DryRun requests answer
// DryRunOperation.
//
// Subscribe delivers instance events synchronously after the world lock is
// released, so subscribers (the simulator's node bridge) may call back in.
//
// # Extensions (server_ext.go)
//
// The Price List API (AWSPriceListService.GetProducts, AWS JSON 1.1, each
// PriceList entry a JSON document in a string, paginated) prices the
// world's on-demand pools, beside Windows, RHEL, dedicated and reservation
// products a filter must exclude. EKS DescribeCluster (REST-JSON, GET
// /clusters/{name}) reports the world's cluster, or one set with
// SetCluster. DriftMarket moves a world's offerings and prices away from
// the catalog snapshot's rule, so tests can tell live data from the
// snapshot. EnforcePolicy authorizes every request against an IAM policy
// (package iampolicy) with the actions, ARNs and condition keys AWS checks,
// and answers a denial as the service would (UnauthorizedOperation with an
// encoded message for EC2, AccessDenied for IAM and SQS,
// AccessDeniedException for the JSON services); tfpolicy renders the
// policy from examples/terraform.
//
// This package imports the AWS SDK only in tests; it must not import
// client-go or controller-runtime.
package fakeaws
