package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestNewSnapshotIndexes(t *testing.T) {
	withID := node("by-id")
	withID.Spec.ProviderID = "aws:///us-east-1a/i-1"
	named := claim("named", "default", 0) // registered as named-node
	byID := claim("by-id-claim", "default", -1)
	byID.Status.ProviderID = "aws:///us-east-1a/i-1"
	launching := claim("launching", "default", -1)
	launching.Status.ProviderID = "aws:///us-east-1a/i-2"
	s := NewSnapshot([]*corev1.Pod{boundPod("a", "named-node"), boundPod("b", "named-node"), pendingPod("c")},
		[]*corev1.Node{node("named-node"), withID}, []*nsv1.NodeClaim{named, byID, launching}, nil, nil, nil)
	tests := []struct {
		name string
		ok   bool
	}{
		{"pods by node", len(s.PodsByNode["named-node"]) == 2 && len(s.PodsByNode) == 1},
		{"nodes by providerID", s.NodeByID["aws:///us-east-1a/i-1"] == withID && len(s.NodeByID) == 1},
		{"claim by status.nodeName", s.ClaimByNode["named-node"] == named},
		{"claim by its node's providerID", s.ClaimByNode["by-id"] == byID},
		{"a claim without a node is not indexed", len(s.ClaimByNode) == 2},
		{"lists kept", len(s.Pods) == 3 && len(s.Nodes) == 2 && len(s.NodeClaims) == 3},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: %+v", tt.name, s)
		}
	}
}
