output "controller_role_arn" {
  description = "The chart's aws.roleArn (irsa) or the role of the Pod Identity association."
  value       = aws_iam_role.controller.arn
}

output "node_role_name" {
  description = "spec.role of your EC2NodeClasses."
  value       = aws_iam_role.node.name
}

output "node_instance_profile" {
  description = "spec.instanceProfile, for EC2NodeClasses that name a profile instead of a role."
  value       = aws_iam_instance_profile.node.name
}

output "interruption_queue" {
  description = "The chart's interruptionQueue."
  value       = aws_sqs_queue.interruption.name
}

output "helm_values" {
  description = "Values to pass to helm install."
  value = {
    clusterName       = var.cluster_name
    interruptionQueue = aws_sqs_queue.interruption.name
    aws = {
      region      = local.region
      credentials = var.credentials
      roleArn     = var.credentials == "irsa" ? aws_iam_role.controller.arn : ""
    }
  }
}
