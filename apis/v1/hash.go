package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// NodePoolHashVersion is stamped next to the hash on every NodeClaim. A
// claim stamped by another version of the hash is never called drifted on
// its hash alone: changing what the hash covers must not roll every node.
const NodePoolHashVersion = "v1"

// nodePoolHashed is what a NodePool's template hash covers: the fields a
// running node would have to be replaced to pick up. Requirements are not
// in it (a node drifts only when it no longer satisfies them, which drift
// checks on its labels), nor expireAfter and terminationGracePeriod (they
// are copied into each claim at creation and apply to new nodes).
type nodePoolHashed struct {
	Labels        map[string]string   `json:"labels,omitempty"`
	Annotations   map[string]string   `json:"annotations,omitempty"`
	Taints        []corev1.Taint      `json:"taints,omitempty"`
	StartupTaints []corev1.Taint      `json:"startupTaints,omitempty"`
	NodeClassRef  *NodeClassReference `json:"nodeClassRef,omitempty"`
}

// Hash is the hash of the pool's template stamped on its NodeClaims
// (AnnotationNodePoolHash). Maps marshal with sorted keys, so it is stable.
func (in *NodePool) Hash() string {
	t := in.Spec.Template
	return HashJSON(nodePoolHashed{
		Labels: t.ObjectMeta.Labels, Annotations: t.ObjectMeta.Annotations,
		Taints: t.Spec.Taints, StartupTaints: t.Spec.StartupTaints, NodeClassRef: t.Spec.NodeClassRef,
	})
}

// HashJSON is a short stable hash of v's JSON form.
func HashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unmarshalable types (channels, funcs) fail; API types never do.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
