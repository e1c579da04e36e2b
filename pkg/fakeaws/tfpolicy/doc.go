// Package tfpolicy renders an IAM policy document written as Terraform
// (a data "aws_iam_policy_document" block, as in examples/terraform) to
// the JSON IAM evaluates, so the simulated AWS can enforce the very policy
// users apply, and tests can check it against the calls the code makes.
//
// It evaluates only what such documents need: variables (their defaults,
// overridden by Values), locals, the aws_caller_identity, aws_partition and
// aws_region data sources, and the ARNs of aws_iam_role and aws_sqs_queue
// resources, from names in the files. Dynamic blocks inside the rendered
// document are refused rather than skipped.
package tfpolicy
