package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

// EC2 error codes the provider acts on.
const (
	codeInsufficientCapacity = "InsufficientInstanceCapacity"
	// codeReservationExceeded: a launch asked a capacity reservation for
	// more instances than it has free.
	codeReservationExceeded    = "ReservationCapacityExceeded"
	codeUnfulfillable          = "UnfulfillableCapacity"
	codeUnsupported            = "Unsupported"
	codeNoFreeAddresses        = "InsufficientFreeAddressesInSubnet"
	codeSpotQuota              = "MaxSpotInstanceCountExceeded"
	codeVCPUQuota              = "VcpuLimitExceeded"
	codeUnauthorized           = "UnauthorizedOperation"
	codeInstanceNotFound       = "InvalidInstanceID.NotFound"
	codeLaunchTemplateNotFound = "InvalidLaunchTemplateName.NotFoundException"
	codeLaunchTemplateIDGone   = "InvalidLaunchTemplateId.NotFound"
	codeLaunchTemplateExists   = "InvalidLaunchTemplateName.AlreadyExistsException"
	// codeIdempotentMismatch: a ClientToken was used before with other parameters.
	codeIdempotentMismatch = "IdempotentParameterMismatch"
	// codeNoSuchEntity is IAM's not-found.
	codeNoSuchEntity = "NoSuchEntity"
	// codeSpotServiceLinkedRole: the account has no AWSServiceRoleForEC2Spot
	// and the caller may not create it (iam:CreateServiceLinkedRole), so
	// EC2 refuses every spot request; on-demand launches are unaffected.
	codeSpotServiceLinkedRole = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"
)

// ReasonSpotServiceLinkedRole is the NodeClaim condition and Event reason of
// a spot launch EC2 refused for want of the Spot service-linked role.
const ReasonSpotServiceLinkedRole = nsv1.ReasonSpotServiceLinkedRoleMissing

// hintSpotServiceLinkedRole is the fix, said wherever the error is.
const hintSpotServiceLinkedRole = "the account has no EC2 Spot service-linked role (AWSServiceRoleForEC2Spot) and the controller may not create it: " +
	"create it once per account with `aws iam create-service-linked-role --aws-service-name spot.amazonaws.com` " +
	"or examples/terraform's -var create_spot_service_linked_role=true; the next launch attempt then succeeds"

// Kind classifies an AWS error for the caller's decision.
type Kind int

const (
	KindOther Kind = iota
	// KindCapacity: the offering has no capacity now; mark it and try others.
	KindCapacity
	// KindQuota: an account limit; retrying elsewhere in the same capacity type will not help.
	KindQuota
	// KindNotFound: the resource does not exist.
	KindNotFound
	// KindUnauthorized: the controller's or the node's IAM setup is missing a permission.
	KindUnauthorized
)

// Classify returns the kind of an EC2 error code.
func Classify(code string) Kind {
	switch code {
	case codeInsufficientCapacity, codeUnfulfillable, codeUnsupported, codeNoFreeAddresses, codeReservationExceeded, "InsufficientCapacity", "InsufficientHostCapacity":
		return KindCapacity
	case codeSpotQuota, codeVCPUQuota, "InstanceLimitExceeded":
		return KindQuota
	case codeUnauthorized, "AuthFailure", "AccessDenied", "AccessDeniedException":
		return KindUnauthorized
	}
	if strings.HasSuffix(code, ".NotFound") || strings.HasSuffix(code, "NotFoundException") || code == "ParameterNotFound" || code == codeNoSuchEntity {
		return KindNotFound
	}
	return KindOther
}

// errorCode returns the AWS error code of err, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// IsNotFound reports whether err is an AWS not-found error.
func IsNotFound(err error) bool { return Classify(errorCode(err)) == KindNotFound }

// hintUnauthorized names the usual causes of an UnauthorizedOperation at
// launch, which EC2 reports without saying which permission is missing.
const hintUnauthorized = "check that the controller's role may call ec2:CreateFleet, ec2:RunInstances and ec2:CreateTags, " +
	"that the instance profile exists, and that the controller may iam:PassRole the node role"

// explain adds the troubleshooting hint users need to an AWS error.
func explain(err error) error {
	if err == nil {
		return nil
	}
	if Classify(errorCode(err)) == KindUnauthorized {
		return fmt.Errorf("%w (%s)", err, hintUnauthorized)
	}
	return err
}

// isTransient reports whether err leaves the outcome of a call unknown: the
// SDK's retryer gave up on an error it retries (throttling, 5xx, timeouts,
// broken connections), classifies it as one it would retry, or the call was
// cut short by its context. The SDK's own classification decides, so this
// agrees with what the retryer did.
func isTransient(err error) bool {
	if err == nil {
		return false
	}
	var maxed *retry.MaxAttemptsError
	if errors.As(err, &maxed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var canceled *aws.RequestCanceledError
	if errors.As(err, &canceled) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// unavailable wraps a transient error as the cloud provider's
// CloudUnavailableError and leaves other errors alone.
func unavailable(err error) error {
	if isTransient(err) && !cloudprovider.IsCloudUnavailable(err) {
		return cloudprovider.NewCloudUnavailableError(err)
	}
	return err
}
