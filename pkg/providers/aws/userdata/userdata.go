package userdata

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// AMI families, as spelled in EC2NodeClass.spec.amiFamily.
const (
	FamilyAL2023       = "AL2023"
	FamilyBottlerocket = "Bottlerocket"
	FamilyCustom       = "Custom"
)

// Options are everything a node needs to join the cluster.
type Options struct {
	Family      string
	ClusterName string
	// Endpoint is the API server URL.
	Endpoint string
	// CABundle is the cluster CA, base64-encoded PEM (as EKS reports it).
	CABundle string
	// ServiceCIDR of the cluster (AL2023: the cluster DNS address comes from it); optional.
	ServiceCIDR string
	// Labels and Taints the kubelet registers the node with.
	Labels map[string]string
	Taints []corev1.Taint
	// Kubelet settings from the node class; nil means defaults.
	Kubelet *awsv1.KubeletConfiguration
	// MaxPods is the pod limit of the instance types the user data serves
	// (Bottlerocket only: it has no pods-per-core, so the caller groups
	// types by their pod capacity and tells the kubelet that number).
	// Zero leaves the limit to Kubelet.MaxPods or the OS.
	MaxPods int64
	// Custom is the node class's own user data, merged in.
	Custom string
}

// Render returns the instance user data (plain text; the launch template
// base64-encodes it).
func Render(o Options) (string, error) {
	switch o.Family {
	case FamilyAL2023, "":
		return renderAL2023(o)
	case FamilyBottlerocket:
		return renderBottlerocket(o), nil
	case FamilyCustom:
		// Custom images bootstrap themselves: what the user wrote is all we send.
		return o.Custom, nil
	default:
		return "", fmt.Errorf("unknown AMI family %q", o.Family)
	}
}

// labelsFlag renders labels the way kubelet's --node-labels expects them:
// sorted so equal inputs give byte-equal user data (and one launch template).
func labelsFlag(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// taintString renders key[=value]:Effect, kubelet's --register-with-taints form.
func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

func taintsFlag(taints []corev1.Taint) string {
	parts := make([]string, 0, len(taints))
	for _, t := range sortedTaints(taints) {
		parts = append(parts, taintString(t))
	}
	return strings.Join(parts, ",")
}

// sortedTaints de-duplicates by key and effect and sorts, keeping user data stable.
func sortedTaints(taints []corev1.Taint) []corev1.Taint {
	seen := map[string]bool{}
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		id := t.Key + "\x00" + string(t.Effect)
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Effect < out[j].Effect
	})
	return out
}

// parseTaint reads key[=value]:Effect.
func parseTaint(s string) (corev1.Taint, error) {
	i := strings.LastIndex(s, ":")
	if i <= 0 {
		return corev1.Taint{}, fmt.Errorf("taint %q has no effect", s)
	}
	t := corev1.Taint{Effect: corev1.TaintEffect(s[i+1:])}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return corev1.Taint{}, fmt.Errorf("taint %q has unknown effect %q", s, t.Effect)
	}
	kv := s[:i]
	if k, v, ok := strings.Cut(kv, "="); ok {
		t.Key, t.Value = k, v
	} else {
		t.Key = kv
	}
	if t.Key == "" {
		return corev1.Taint{}, fmt.Errorf("taint %q has no key", s)
	}
	return t, nil
}

// parseLabels reads k=v,k2=v2.
func parseLabels(s string, into map[string]string) error {
	if s == "" {
		return nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("label %q is not key=value", kv)
		}
		into[k] = v
	}
	return nil
}
