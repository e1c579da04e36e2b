# The interruption queue: EventBridge sends spot interruption warnings,
# rebalance recommendations, instance state changes and AWS Health scheduled
# changes here; the controller reads it (chart value interruptionQueue).
# Messages older than five minutes are stale (a spot warning gives two), so
# retention is short; failures go to a dead-letter queue for inspection.
resource "aws_sqs_queue" "interruption_dlq" {
  name                      = "${local.queue_name}-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "interruption" {
  name                      = local.queue_name
  message_retention_seconds = 300
  sqs_managed_sse_enabled   = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.interruption_dlq.arn
    maxReceiveCount     = 5
  })
}

data "aws_iam_policy_document" "interruption_queue" {
  statement {
    sid       = "EventBridgeSends"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.interruption.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com", "sqs.amazonaws.com"]
    }
  }
  statement {
    sid       = "DenyPlainTransport"
    effect    = "Deny"
    actions   = ["sqs:*"]
    resources = [aws_sqs_queue.interruption.arn]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_sqs_queue_policy" "interruption" {
  queue_url = aws_sqs_queue.interruption.url
  policy    = data.aws_iam_policy_document.interruption_queue.json
}

locals {
  interruption_events = {
    spot_interruption        = { source = "aws.ec2", detail_type = "EC2 Spot Instance Interruption Warning" }
    reservation_interruption = { source = "aws.ec2", detail_type = "EC2 Capacity Reservation Instance Interruption Warning" }
    rebalance                = { source = "aws.ec2", detail_type = "EC2 Instance Rebalance Recommendation" }
    state_change             = { source = "aws.ec2", detail_type = "EC2 Instance State-change Notification" }
    scheduled_change         = { source = "aws.health", detail_type = "AWS Health Event" }
  }
}

resource "aws_cloudwatch_event_rule" "interruption" {
  for_each    = local.interruption_events
  name        = "${local.queue_name}-${replace(each.key, "_", "-")}"
  description = "Nodesmith ${var.cluster_name}: ${each.value.detail_type}"
  event_pattern = jsonencode({
    source      = [each.value.source]
    detail-type = [each.value.detail_type]
  })
}

resource "aws_cloudwatch_event_target" "interruption" {
  for_each = local.interruption_events
  rule     = aws_cloudwatch_event_rule.interruption[each.key].name
  arn      = aws_sqs_queue.interruption.arn
}
