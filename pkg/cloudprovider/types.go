package cloudprovider

import (
	"context"
	"errors"
	"fmt"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// CloudProvider launches and removes the instances behind NodeClaims.
//
// Error contract:
//   - Create returns an InsufficientCapacityError when no requested offering
//     had capacity (the offerings that failed are already marked unavailable,
//     so the next GetInstanceTypes call reflects them), a NodeClassNotReadyError
//     when the node class cannot be resolved (no subnets, no AMI…), a
//     LaunchRejectedError when the cloud answered and launched nothing (a
//     quota, a permission, a parameter it refused), a CloudUnavailableError
//     when the cloud gave no answer (so an instance may or may not have been
//     launched), and other errors for unexpected failures.
//   - Create is idempotent per NodeClaim: calling it again for the same claim
//     — after a lost answer, a crash, or on another replica after a failover
//     — returns the instance an earlier call launched instead of launching a
//     second one. What makes a retry a new launch is the claim's launch
//     attempt (the nsv1.AnnotationLaunchAttempt annotation), which the caller
//     raises, and persists, only after a LaunchRejectedError (or, for a
//     claim it keeps, an InsufficientCapacityError): the cloud answered and
//     launched nothing, and the old attempt would only replay that answer.
//   - Delete and Get return a NodeClaimNotFoundError when the instance is
//     already gone; Delete of a terminating instance returns nil. Any method
//     returns a CloudUnavailableError when the cloud did not answer: callers
//     must not conclude from it that an instance exists or is gone.
type CloudProvider interface {
	// Create launches an instance for the claim and returns a copy of it with
	// status filled: providerID, instance type, zone, capacity type, price,
	// capacity, allocatable and image.
	Create(ctx context.Context, claim *nsv1.NodeClaim) (*nsv1.NodeClaim, error)
	// CreateAll launches several claims together, one result per claim in
	// order, with Create's contract for each. Claims asking for the same
	// thing may share one cloud call; the same input makes the same calls
	// in the same order, so a simulator replays it exactly.
	CreateAll(ctx context.Context, claims []*nsv1.NodeClaim) []CreateResult
	// Delete terminates the instance behind the claim.
	Delete(ctx context.Context, claim *nsv1.NodeClaim) error
	// Get returns the claim shape of the instance with the given providerID.
	Get(ctx context.Context, providerID string) (*nsv1.NodeClaim, error)
	// List returns every instance this cluster launched, as NodeClaims
	// (name from the nodesmith.sh/nodeclaim tag, creation time from launch time).
	List(ctx context.Context) ([]*nsv1.NodeClaim, error)
	// GetInstanceTypes returns the instance types the pool may launch, with
	// their offerings' current price and availability.
	GetInstanceTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error)
	// Name identifies the provider ("aws").
	Name() string
}

// InsufficientCapacityError means no requested offering had capacity.
type InsufficientCapacityError struct{ Err error }

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity: %v", e.Err)
}
func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// NewInsufficientCapacityError wraps err.
func NewInsufficientCapacityError(err error) error { return &InsufficientCapacityError{Err: err} }

// IsInsufficientCapacity reports whether err is (or wraps) an InsufficientCapacityError.
func IsInsufficientCapacity(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// NodeClaimNotFoundError means the instance behind a claim no longer exists.
type NodeClaimNotFoundError struct{ Err error }

func (e *NodeClaimNotFoundError) Error() string { return fmt.Sprintf("nodeclaim not found: %v", e.Err) }
func (e *NodeClaimNotFoundError) Unwrap() error { return e.Err }

// NewNodeClaimNotFoundError wraps err.
func NewNodeClaimNotFoundError(err error) error { return &NodeClaimNotFoundError{Err: err} }

// IsNodeClaimNotFound reports whether err is (or wraps) a NodeClaimNotFoundError.
func IsNodeClaimNotFound(err error) bool {
	var e *NodeClaimNotFoundError
	return errors.As(err, &e)
}

// IgnoreNodeClaimNotFound returns nil for a NodeClaimNotFoundError and err otherwise.
func IgnoreNodeClaimNotFound(err error) error {
	if IsNodeClaimNotFound(err) {
		return nil
	}
	return err
}

// NodeClassNotReadyError means the node class cannot be resolved to launch settings.
type NodeClassNotReadyError struct{ Err error }

func (e *NodeClassNotReadyError) Error() string {
	return fmt.Sprintf("node class not ready: %v", e.Err)
}
func (e *NodeClassNotReadyError) Unwrap() error { return e.Err }

// NewNodeClassNotReadyError wraps err.
func NewNodeClassNotReadyError(err error) error { return &NodeClassNotReadyError{Err: err} }

// IsNodeClassNotReady reports whether err is (or wraps) a NodeClassNotReadyError.
func IsNodeClassNotReady(err error) bool {
	var e *NodeClassNotReadyError
	return errors.As(err, &e)
}

// CreateResult is one claim's outcome of CreateAll: the launched claim, or
// the error Create would have returned for it.
type CreateResult struct {
	Claim *nsv1.NodeClaim
	Err   error
}

// CloudUnavailableError means the cloud gave no answer: it throttled, failed
// with server errors or timed out through all of the client's retries, could
// not be reached, or the call was cut short. What a mutating call did is
// unknown, so a caller must neither assume that an instance was launched or
// terminated nor delete anything because of it.
type CloudUnavailableError struct{ Err error }

func (e *CloudUnavailableError) Error() string { return fmt.Sprintf("cloud unavailable: %v", e.Err) }
func (e *CloudUnavailableError) Unwrap() error { return e.Err }

// NewCloudUnavailableError wraps err.
func NewCloudUnavailableError(err error) error { return &CloudUnavailableError{Err: err} }

// IsCloudUnavailable reports whether err is (or wraps) a CloudUnavailableError.
func IsCloudUnavailable(err error) bool {
	var e *CloudUnavailableError
	return errors.As(err, &e)
}

// LaunchRejectedError means the cloud answered a launch and launched
// nothing for the claim: a quota, a permission or a parameter it refused. A
// retry is a new launch attempt: the caller raises the claim's
// nsv1.AnnotationLaunchAttempt so the provider uses a new idempotency token
// (the old one would only replay this answer).
type LaunchRejectedError struct{ Err error }

func (e *LaunchRejectedError) Error() string { return fmt.Sprintf("launch rejected: %v", e.Err) }
func (e *LaunchRejectedError) Unwrap() error { return e.Err }

// NewLaunchRejectedError wraps err.
func NewLaunchRejectedError(err error) error { return &LaunchRejectedError{Err: err} }

// IsLaunchRejected reports whether err is (or wraps) a LaunchRejectedError.
func IsLaunchRejected(err error) bool {
	var e *LaunchRejectedError
	return errors.As(err, &e)
}

// AccountSetupError, wrapped in a LaunchRejectedError, is a rejection whose cause is a one-time setup
// step the cloud account lacks (AWS: the EC2 Spot service-linked role), not
// the claim or the node class: every launch of that kind fails the same way
// until someone fixes the account. Reason is the condition and Event reason
// callers report it under; the message names the fix.
type AccountSetupError struct {
	Reason string
	Err    error
}

func (e *AccountSetupError) Error() string { return e.Err.Error() }
func (e *AccountSetupError) Unwrap() error { return e.Err }

// AccountSetupReason is the Reason of an AccountSetupError err wraps, or "".
func AccountSetupReason(err error) string {
	var e *AccountSetupError
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}
