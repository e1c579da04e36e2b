# EC2NodeClasses find subnets and security groups by this tag
# (subnetSelectorTerms / securityGroupSelectorTerms with
# nodesmith.sh/discovery: <cluster_name>, as examples/ use).
resource "aws_ec2_tag" "subnet_discovery" {
  for_each    = toset(var.subnet_ids)
  resource_id = each.value
  key         = local.discovery_tag
  value       = var.cluster_name
}

resource "aws_ec2_tag" "security_group_discovery" {
  for_each    = toset(var.security_group_ids)
  resource_id = each.value
  key         = local.discovery_tag
  value       = var.cluster_name
}
