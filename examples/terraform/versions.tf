terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40"
    }
  }
}

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}
data "aws_region" "current" {}

locals {
  account   = data.aws_caller_identity.current.account_id
  partition = data.aws_partition.current.partition
  region    = data.aws_region.current.name
  # The tag Nodesmith puts on everything it creates (instances, volumes,
  # fleets, launch templates, instance profiles); the policy's deletes are
  # conditioned on it.
  cluster_tag = "nodesmith.sh/cluster"
  # The tag subnets and security groups are discovered by.
  discovery_tag = "nodesmith.sh/discovery"
  # Managed instance profiles live under this IAM path.
  profile_path   = "/nodesmith/"
  queue_name     = var.interruption_queue_name != "" ? var.interruption_queue_name : "${var.cluster_name}-nodesmith"
  node_role_name = var.node_role_name != "" ? var.node_role_name : "NodesmithNodeRole-${var.cluster_name}"
}
