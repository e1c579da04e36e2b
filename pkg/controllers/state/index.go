package state

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Field indexes the controllers look objects up by.
const (
	PodNodeNameIndex         = "spec.nodeName"
	NodeProviderIDIndex      = "spec.providerID"
	NodeClaimProviderIDIndex = "status.providerID"
	NodeClaimNodeNameIndex   = "status.nodeName"
	// NodeClaimInstanceIDIndex keys claims by the last segment of their
	// providerID (the EC2 instance id of aws:///<zone>/<id>), which is all
	// an interruption notice names.
	NodeClaimInstanceIDIndex = "status.providerID.instanceID"
)

// IndexFields registers the field indexes on the manager's cache; call it
// before the manager starts.
func IndexFields(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &corev1.Pod{}, PodNodeNameIndex, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	if err := idx.IndexField(ctx, &corev1.Node{}, NodeProviderIDIndex, func(o client.Object) []string {
		if id := o.(*corev1.Node).Spec.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodes by providerID: %w", err)
	}
	if err := idx.IndexField(ctx, &nsv1.NodeClaim{}, NodeClaimProviderIDIndex, func(o client.Object) []string {
		if id := o.(*nsv1.NodeClaim).Status.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by providerID: %w", err)
	}
	if err := idx.IndexField(ctx, &nsv1.NodeClaim{}, NodeClaimInstanceIDIndex, func(o client.Object) []string {
		if id := InstanceID(o.(*nsv1.NodeClaim).Status.ProviderID); id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by instance id: %w", err)
	}
	if err := idx.IndexField(ctx, &nsv1.NodeClaim{}, NodeClaimNodeNameIndex, func(o client.Object) []string {
		if n := o.(*nsv1.NodeClaim).Status.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by node name: %w", err)
	}
	return nil
}

// InstanceID is the last path segment of a providerID ("" when there is none).
func InstanceID(providerID string) string {
	i := strings.LastIndex(providerID, "/")
	if i < 0 || i == len(providerID)-1 {
		return ""
	}
	return providerID[i+1:]
}

// ClaimsByInstanceID lists the NodeClaims whose providerID ends in id.
func ClaimsByInstanceID(ctx context.Context, c client.Reader, id string) ([]nsv1.NodeClaim, error) {
	var list nsv1.NodeClaimList
	if err := c.List(ctx, &list, client.MatchingFields{NodeClaimInstanceIDIndex: id}); err != nil {
		return nil, fmt.Errorf("finding the nodeclaim of instance %s: %w", id, err)
	}
	return list.Items, nil
}

// ClaimByNodeName returns the NodeClaim registered as node, or nil.
//
// opts are added to the list (client.UnsafeDisableDeepCopy for a caller
// that only reads: the claim is then the cache's own).
func ClaimByNodeName(ctx context.Context, c client.Reader, node string, opts ...client.ListOption) (*nsv1.NodeClaim, error) {
	var list nsv1.NodeClaimList
	if err := c.List(ctx, &list, append([]client.ListOption{client.MatchingFields{NodeClaimNodeNameIndex: node}}, opts...)...); err != nil {
		return nil, fmt.Errorf("finding the nodeclaim of node %s: %w", node, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// PodsOnNode lists the pods bound to node; opts are added to the list (as
// for ClaimByNodeName).
func PodsOnNode(ctx context.Context, c client.Reader, node string, opts ...client.ListOption) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, append([]client.ListOption{client.MatchingFields{PodNodeNameIndex: node}}, opts...)...); err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", node, err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// NodeForClaim returns the Node registered for claim (by providerID), or nil.
func NodeForClaim(ctx context.Context, c client.Reader, claim *nsv1.NodeClaim) (*corev1.Node, error) {
	if claim.Status.ProviderID == "" {
		return nil, nil
	}
	var list corev1.NodeList
	if err := c.List(ctx, &list, client.MatchingFields{NodeProviderIDIndex: claim.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("finding the node of nodeclaim %s: %w", claim.Name, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, nil
	case 1:
		return &list.Items[0], nil
	}
	return nil, fmt.Errorf("nodeclaim %s: %d nodes share providerID %s", claim.Name, len(list.Items), claim.Status.ProviderID)
}

// ClaimForNode returns the NodeClaim whose instance backs node, or nil.
func ClaimForNode(ctx context.Context, c client.Reader, node *corev1.Node) (*nsv1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	var list nsv1.NodeClaimList
	if err := c.List(ctx, &list, client.MatchingFields{NodeClaimProviderIDIndex: node.Spec.ProviderID}); err != nil {
		return nil, fmt.Errorf("finding the nodeclaim of node %s: %w", node.Name, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}
