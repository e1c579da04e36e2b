package provisioning

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// NewSnapshot indexes listed objects into a Snapshot: pods by the node they
// are bound to, nodes by providerID, and claims by the node they registered
// as (by status.nodeName, or else by a node with their providerID). The
// controller's cache and the CLI's snapshot files are indexed the same way.
func NewSnapshot(pods []*corev1.Pod, nodes []*corev1.Node, claims []*nsv1.NodeClaim, pools []*nsv1.NodePool,
	dss []*appsv1.DaemonSet, pdbs []*policyv1.PodDisruptionBudget) *Snapshot {
	s := &Snapshot{Pods: pods, Nodes: nodes, NodeClaims: claims, NodePools: pools, DaemonSets: dss, PDBs: pdbs,
		PodsByNode: map[string][]*corev1.Pod{}, NodeByID: map[string]*corev1.Node{}, ClaimByNode: map[string]*nsv1.NodeClaim{}}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			s.PodsByNode[p.Spec.NodeName] = append(s.PodsByNode[p.Spec.NodeName], p)
		}
	}
	for _, n := range nodes {
		if n.Spec.ProviderID != "" {
			s.NodeByID[n.Spec.ProviderID] = n
		}
	}
	for _, c := range claims {
		if c.Status.NodeName != "" {
			s.ClaimByNode[c.Status.NodeName] = c
		} else if n, ok := s.NodeByID[c.Status.ProviderID]; ok && c.Status.ProviderID != "" {
			s.ClaimByNode[n.Name] = c
		}
	}
	return s
}
