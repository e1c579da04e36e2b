variable "cluster_name" {
  description = "Name of the EKS cluster Nodesmith runs in (the chart's clusterName)."
  type        = string
}

variable "namespace" {
  description = "Namespace the chart is installed in."
  type        = string
  default     = "nodesmith"
}

variable "service_account" {
  description = "The controller's ServiceAccount (the chart's release full name by default)."
  type        = string
  default     = "nodesmith"
}

variable "credentials" {
  description = "How the controller gets its role: \"irsa\" (trust the cluster's OIDC provider) or \"podIdentity\" (an EKS Pod Identity association). Match the chart's aws.credentials."
  type        = string
  default     = "podIdentity"
  validation {
    condition     = contains(["irsa", "podIdentity"], var.credentials)
    error_message = "credentials must be irsa or podIdentity."
  }
}

variable "oidc_provider_arn" {
  description = "ARN of the cluster's IAM OIDC provider; required for irsa."
  type        = string
  default     = ""
}

variable "subnet_ids" {
  description = "Subnets nodes may launch in (usually the private subnets); tagged nodesmith.sh/discovery=<cluster_name>."
  type        = list(string)
  default     = []
}

variable "security_group_ids" {
  description = "Security groups nodes get (usually the cluster's node security group); tagged nodesmith.sh/discovery=<cluster_name>."
  type        = list(string)
  default     = []
}

variable "node_role_name" {
  description = "Name of the node role to create (spec.role of your EC2NodeClasses); default NodesmithNodeRole-<cluster_name>."
  type        = string
  default     = ""
}

variable "interruption_queue_name" {
  description = "Name of the interruption queue (the chart's interruptionQueue); default <cluster_name>-nodesmith."
  type        = string
  default     = ""
}

variable "create_spot_service_linked_role" {
  description = "Create the account's EC2 Spot service-linked role (AWSServiceRoleForEC2Spot). Needed once per account before the first spot launch; leave false where it exists (aws iam get-role --role-name AWSServiceRoleForEC2Spot), since an account holds one."
  type        = bool
  default     = false
}
