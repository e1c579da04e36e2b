# EC2 launches spot instances through the AWSServiceRoleForEC2Spot
# service-linked role. An account has at most one; EC2 creates it on the
# first spot request of a caller that may create it, which the controller's
# least-privilege role may not. In an account that never ran spot, the first
# launch then fails with AuthFailure.ServiceLinkedRoleCreationNotPermitted
# (the NodeClaim's Launched condition and the NodePool's CloudAccountReady
# condition say so, with reason SpotServiceLinkedRoleMissing). Set create_spot_service_linked_role
# when `aws iam get-role --role-name AWSServiceRoleForEC2Spot` finds none;
# creating it where it exists fails ("has been taken in this account").
resource "aws_iam_service_linked_role" "spot" {
  count            = var.create_spot_service_linked_role ? 1 : 0
  aws_service_name = "spot.amazonaws.com"
  description      = "Lets EC2 launch and manage spot instances (Nodesmith ${var.cluster_name})."
}
