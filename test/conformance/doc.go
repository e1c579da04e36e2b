// Package conformance checks the simulated AWS (cmd/fake-aws) with a client
// nobody here wrote: botocore, the Python SDK, whose serializers and parsers
// come from AWS's own service models. The test builds cmd/fake-aws, starts it
// on loopback, and runs botocore_suite.py against it: every EC2, IAM, SQS and
// SSM operation the product calls, the other operations the fake serves, and
// the error cases AWS documents. Each check is reported to go test; the suite
// fails (never skips) when python3, boto3 or botocore is missing.
//
// It imports nothing from the product: the fake is reached over HTTP only.
package conformance
