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
//     when the node class cannot be resolved (no subnets, no AMI…), and other
//     errors for transient or unexpected failures. Create is idempotent per
//     NodeClaim: calling it twice for the same claim never launches twice.
//   - Delete and Get return a NodeClaimNotFoundError when the instance is
//     already gone; Delete of a terminating instance returns nil.
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
