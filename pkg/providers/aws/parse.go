package aws

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodesmith/nodesmith/pkg/providers/aws/userdata"
)

// ParseUserData returns the labels and taints a node registers with, read
// from its user data (plain or base64) as the kubelet would read them.
func ParseUserData(s string) (map[string]string, []corev1.Taint, error) {
	return userdata.Parse(s)
}
