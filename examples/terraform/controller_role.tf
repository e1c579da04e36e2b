# The controller's role, assumed either through IRSA (the cluster's OIDC
# provider vouches for the ServiceAccount) or through EKS Pod Identity (an
# association binds the role to the ServiceAccount; needs the
# eks-pod-identity-agent add-on). Pick one with var.credentials and set the
# chart's aws.credentials to match.
data "aws_iam_policy_document" "controller_trust" {
  dynamic "statement" {
    for_each = var.credentials == "irsa" ? [1] : []
    content {
      effect  = "Allow"
      actions = ["sts:AssumeRoleWithWebIdentity"]
      principals {
        type        = "Federated"
        identifiers = [var.oidc_provider_arn]
      }
      condition {
        test     = "StringEquals"
        variable = "${replace(var.oidc_provider_arn, "/^.*oidc-provider\\//", "")}:sub"
        values   = ["system:serviceaccount:${var.namespace}:${var.service_account}"]
      }
      condition {
        test     = "StringEquals"
        variable = "${replace(var.oidc_provider_arn, "/^.*oidc-provider\\//", "")}:aud"
        values   = ["sts.amazonaws.com"]
      }
    }
  }
  dynamic "statement" {
    for_each = var.credentials == "podIdentity" ? [1] : []
    content {
      effect  = "Allow"
      actions = ["sts:AssumeRole", "sts:TagSession"]
      principals {
        type        = "Service"
        identifiers = ["pods.eks.amazonaws.com"]
      }
    }
  }
}

resource "aws_iam_role" "controller" {
  name               = "NodesmithController-${var.cluster_name}"
  assume_role_policy = data.aws_iam_policy_document.controller_trust.json
  lifecycle {
    precondition {
      condition     = var.credentials != "irsa" || var.oidc_provider_arn != ""
      error_message = "oidc_provider_arn is required when credentials is irsa."
    }
  }
}

resource "aws_iam_role_policy_attachment" "controller" {
  role       = aws_iam_role.controller.name
  policy_arn = aws_iam_policy.controller.arn
}

resource "aws_eks_pod_identity_association" "controller" {
  count           = var.credentials == "podIdentity" ? 1 : 0
  cluster_name    = var.cluster_name
  namespace       = var.namespace
  service_account = var.service_account
  role_arn        = aws_iam_role.controller.arn
}
