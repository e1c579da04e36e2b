# The controller's least-privilege policy. Every write is scoped: creates
# must carry the cluster tag, deletes and tag changes only touch resources
# that already carry it, PassRole only reaches the node role, and instance
# profiles live under the /nodesmith/ path. Reads are limited to the region.
# A Go test (pkg/fakeaws/tfpolicy) renders this document and checks that it
# grants every AWS call the controller's code makes, and the simulated AWS
# can enforce it (fake-aws --policy-from-terraform examples/terraform).
data "aws_iam_policy_document" "controller" {
  statement {
    sid    = "RegionalReads"
    effect = "Allow"
    actions = [
      "ec2:DescribeCapacityReservations",
      "ec2:DescribeImages",
      "ec2:DescribeInstanceTypeOfferings",
      "ec2:DescribeInstanceTypes",
      "ec2:DescribeInstances",
      "ec2:DescribeLaunchTemplates",
      "ec2:DescribeSecurityGroups",
      "ec2:DescribeSpotPriceHistory",
      "ec2:DescribeSubnets",
    ]
    resources = ["*"]
    condition {
      test     = "StringEquals"
      variable = "aws:RequestedRegion"
      values   = [local.region]
    }
  }

  statement {
    sid     = "LaunchFromDiscoveredResources"
    effect  = "Allow"
    actions = ["ec2:CreateFleet", "ec2:RunInstances"]
    resources = [
      "arn:${local.partition}:ec2:${local.region}:*:capacity-reservation/*",
      "arn:${local.partition}:ec2:${local.region}::image/*",
      "arn:${local.partition}:ec2:${local.region}::snapshot/*",
      "arn:${local.partition}:ec2:${local.region}:*:security-group/*",
      "arn:${local.partition}:ec2:${local.region}:*:subnet/*",
    ]
  }

  statement {
    sid       = "LaunchFromOwnLaunchTemplates"
    effect    = "Allow"
    actions   = ["ec2:CreateFleet", "ec2:RunInstances"]
    resources = ["arn:${local.partition}:ec2:${local.region}:*:launch-template/*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/${local.cluster_tag}"
      values   = [var.cluster_name]
    }
  }

  statement {
    sid     = "CreateTaggedForCluster"
    effect  = "Allow"
    actions = ["ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:RunInstances"]
    resources = [
      "arn:${local.partition}:ec2:${local.region}:*:fleet/*",
      "arn:${local.partition}:ec2:${local.region}:*:instance/*",
      "arn:${local.partition}:ec2:${local.region}:*:launch-template/*",
      "arn:${local.partition}:ec2:${local.region}:*:network-interface/*",
      "arn:${local.partition}:ec2:${local.region}:*:spot-instances-request/*",
      "arn:${local.partition}:ec2:${local.region}:*:volume/*",
    ]
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/${local.cluster_tag}"
      values   = [var.cluster_name]
    }
  }

  statement {
    sid     = "TagOnCreate"
    effect  = "Allow"
    actions = ["ec2:CreateTags"]
    resources = [
      "arn:${local.partition}:ec2:${local.region}:*:fleet/*",
      "arn:${local.partition}:ec2:${local.region}:*:instance/*",
      "arn:${local.partition}:ec2:${local.region}:*:launch-template/*",
      "arn:${local.partition}:ec2:${local.region}:*:network-interface/*",
      "arn:${local.partition}:ec2:${local.region}:*:spot-instances-request/*",
      "arn:${local.partition}:ec2:${local.region}:*:volume/*",
    ]
    condition {
      test     = "StringEquals"
      variable = "ec2:CreateAction"
      values   = ["CreateFleet", "CreateLaunchTemplate", "RunInstances"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/${local.cluster_tag}"
      values   = [var.cluster_name]
    }
  }

  statement {
    sid       = "NameOwnInstances"
    effect    = "Allow"
    actions   = ["ec2:CreateTags"]
    resources = ["arn:${local.partition}:ec2:${local.region}:*:instance/*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/${local.cluster_tag}"
      values   = [var.cluster_name]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "aws:TagKeys"
      values   = ["Name", "nodesmith.sh/nodeclaim"]
    }
  }

  statement {
    sid     = "DeleteOwned"
    effect  = "Allow"
    actions = ["ec2:DeleteLaunchTemplate", "ec2:TerminateInstances"]
    resources = [
      "arn:${local.partition}:ec2:${local.region}:*:instance/*",
      "arn:${local.partition}:ec2:${local.region}:*:launch-template/*",
    ]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/${local.cluster_tag}"
      values   = [var.cluster_name]
    }
  }

  statement {
    sid       = "AMIAliases"
    effect    = "Allow"
    actions   = ["ssm:GetParameter"]
    resources = ["arn:${local.partition}:ssm:${local.region}::parameter/aws/service/*"]
  }

  statement {
    sid       = "OnDemandPrices"
    effect    = "Allow"
    actions   = ["pricing:GetProducts"]
    resources = ["*"]
  }

  statement {
    sid       = "ClusterEndpoint"
    effect    = "Allow"
    actions   = ["eks:DescribeCluster"]
    resources = ["arn:${local.partition}:eks:${local.region}:${local.account}:cluster/${var.cluster_name}"]
  }

  statement {
    sid       = "InterruptionQueue"
    effect    = "Allow"
    actions   = ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.interruption.arn]
  }

  statement {
    sid       = "PassNodeRole"
    effect    = "Allow"
    actions   = ["iam:PassRole"]
    resources = [aws_iam_role.node.arn]
    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["ec2.amazonaws.com"]
    }
  }

  statement {
    sid       = "CreateInstanceProfiles"
    effect    = "Allow"
    actions   = ["iam:CreateInstanceProfile", "iam:TagInstanceProfile"]
    resources = ["arn:${local.partition}:iam::${local.account}:instance-profile${local.profile_path}*"]
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/${local.cluster_tag}"
      values   = [var.cluster_name]
    }
  }

  statement {
    sid       = "ManageOwnInstanceProfiles"
    effect    = "Allow"
    actions   = ["iam:AddRoleToInstanceProfile", "iam:DeleteInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:TagInstanceProfile"]
    resources = ["arn:${local.partition}:iam::${local.account}:instance-profile${local.profile_path}*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/${local.cluster_tag}"
      values   = [var.cluster_name]
    }
  }

  statement {
    sid       = "ReadInstanceProfiles"
    effect    = "Allow"
    actions   = ["iam:GetInstanceProfile"]
    resources = ["arn:${local.partition}:iam::${local.account}:instance-profile/*"]
  }
}

resource "aws_iam_policy" "controller" {
  name        = "NodesmithController-${var.cluster_name}"
  description = "Nodesmith controller for EKS cluster ${var.cluster_name}"
  policy      = data.aws_iam_policy_document.controller.json
}
