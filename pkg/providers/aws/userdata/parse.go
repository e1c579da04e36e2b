package userdata

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Parse returns the labels and taints a node registers with, read from user
// data as the kubelet would get them: the --node-labels and
// --register-with-taints flags of nodeadm NodeConfig parts, or Bottlerocket's
// node-labels and node-taints settings. It accepts plain or base64 text (EC2
// returns user data base64-encoded). Custom user data yields nothing.
func Parse(s string) (map[string]string, []corev1.Taint, error) {
	s = maybeBase64(s)
	switch {
	case isMIME(s):
		return parseMIME(s)
	case strings.Contains(s, "["+tableKubernetes+"]"):
		return parseBottlerocket(s)
	case strings.Contains(s, "kind: NodeConfig"):
		labels, taints := map[string]string{}, []corev1.Taint(nil)
		taints, err := parseNodeConfig(s, labels, taints)
		return labels, taints, err
	default:
		return map[string]string{}, nil, nil
	}
}

func maybeBase64(s string) string {
	trimmed := strings.TrimSpace(s)
	if strings.ContainsAny(trimmed, " \n:[") {
		return s
	}
	b, err := base64.StdEncoding.DecodeString(trimmed)
	if err != nil || !utf8.Valid(b) {
		return s
	}
	return string(b)
}

func parseMIME(s string) (map[string]string, []corev1.Taint, error) {
	parts, err := readParts(s)
	if err != nil {
		return nil, nil, err
	}
	labels := map[string]string{}
	var taints []corev1.Taint
	for _, p := range parts {
		if !strings.HasPrefix(p.contentType, nodeConfigContentType) {
			continue
		}
		if taints, err = parseNodeConfig(p.body, labels, taints); err != nil {
			return nil, nil, err
		}
	}
	return labels, taints, nil
}

// parseNodeConfig folds the flags of one NodeConfig into labels and taints;
// later parts override earlier ones, as nodeadm merges them.
func parseNodeConfig(doc string, labels map[string]string, taints []corev1.Taint) ([]corev1.Taint, error) {
	var cfg nodeConfig
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		return nil, fmt.Errorf("reading NodeConfig: %w", err)
	}
	if cfg.Spec.Kubelet == nil {
		return taints, nil
	}
	for _, f := range cfg.Spec.Kubelet.Flags {
		name, val, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		switch name {
		case "node-labels":
			if err := parseLabels(val, labels); err != nil {
				return nil, err
			}
		case "register-with-taints":
			if val == "" {
				continue
			}
			for _, ts := range strings.Split(val, ",") {
				t, err := parseTaint(ts)
				if err != nil {
					return nil, err
				}
				taints = append(taints, t)
			}
		}
	}
	return taints, nil
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
