package userdata

import "strings"

// kubeletLabels are the labels in the kubernetes.io and k8s.io domains a
// kubelet may set on its own Node (the NodeRestriction admission plugin's
// list), besides those in kubeletNamespaces.
var kubeletLabels = map[string]bool{
	"kubernetes.io/hostname": true, "kubernetes.io/os": true, "kubernetes.io/arch": true,
	"beta.kubernetes.io/os": true, "beta.kubernetes.io/arch": true, "beta.kubernetes.io/instance-type": true,
	"node.kubernetes.io/instance-type": true,
	"topology.kubernetes.io/zone":      true, "topology.kubernetes.io/region": true,
	"failure-domain.beta.kubernetes.io/zone": true, "failure-domain.beta.kubernetes.io/region": true,
}

// kubeletNamespaces are the label domains (and their subdomains) a kubelet
// may set every key of.
var kubeletNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}

// KubeletMaySet reports whether a kubelet may register its Node with the
// label key: keys outside the kubernetes.io and k8s.io domains, and inside
// them the kubelet's own. A kubelet given any other such key in
// --node-labels (node-restriction.kubernetes.io/…, kops.k8s.io/…) refuses
// to start, so those are left to the controller, which puts a claim's
// labels on its Node when it registers.
func KubeletMaySet(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	if !inDomain(domain, "kubernetes.io") && !inDomain(domain, "k8s.io") {
		return true
	}
	if kubeletLabels[key] {
		return true
	}
	for _, ns := range kubeletNamespaces {
		if inDomain(domain, ns) {
			return true
		}
	}
	return false
}

// inDomain reports whether domain is d or a subdomain of it.
func inDomain(domain, d string) bool {
	return domain == d || strings.HasSuffix(domain, "."+d)
}
