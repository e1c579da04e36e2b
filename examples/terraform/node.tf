# The role nodes run with (an EC2NodeClass's spec.role). Nodesmith makes one
# instance profile per EC2NodeClass for it; the profile below is for
# EC2NodeClasses that name spec.instanceProfile instead.
data "aws_iam_policy_document" "node_trust" {
  statement {
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "node" {
  name               = local.node_role_name
  assume_role_policy = data.aws_iam_policy_document.node_trust.json
}

resource "aws_iam_role_policy_attachment" "node" {
  for_each = toset([
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
  ])
  role       = aws_iam_role.node.name
  policy_arn = "arn:${local.partition}:iam::aws:policy/${each.value}"
}

resource "aws_iam_instance_profile" "node" {
  name = "NodesmithNode-${var.cluster_name}"
  path = local.profile_path
  role = aws_iam_role.node.name
  tags = { (local.cluster_tag) = var.cluster_name }
}

# Nodes join only if the cluster trusts their role: an access entry (the
# cluster's authentication mode must be API or API_AND_CONFIG_MAP).
resource "aws_eks_access_entry" "node" {
  cluster_name  = var.cluster_name
  principal_arn = aws_iam_role.node.arn
  type          = "EC2_LINUX"
}
