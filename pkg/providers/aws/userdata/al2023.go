package userdata

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"

	"sigs.k8s.io/yaml"
)

// nodeadm reads MIME parts of this content type as NodeConfig documents and
// merges them in order.
const nodeConfigContentType = "application/node.eks.aws"

// boundary is the one the EKS documentation uses; any token would do.
const boundary = "//"

type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster *clusterDetails `json:"cluster,omitempty"`
	Kubelet *kubeletOptions `json:"kubelet,omitempty"`
}

type clusterDetails struct {
	Name                 string `json:"name"`
	APIServerEndpoint    string `json:"apiServerEndpoint"`
	CertificateAuthority string `json:"certificateAuthority"`
	// CIDR is the service CIDR; nodeadm derives the cluster DNS address from it.
	CIDR string `json:"cidr,omitempty"`
}

type kubeletOptions struct {
	Config map[string]any `json:"config,omitempty"`
	Flags  []string       `json:"flags,omitempty"`
}

func renderAL2023(o Options) (string, error) {
	cfg := nodeConfig{
		APIVersion: "node.eks.aws/v1alpha1",
		Kind:       "NodeConfig",
		Spec: nodeConfigSpec{
			Cluster: &clusterDetails{Name: o.ClusterName, APIServerEndpoint: o.Endpoint, CertificateAuthority: o.CABundle, CIDR: o.ServiceCIDR},
			Kubelet: &kubeletOptions{Config: kubeletConfig(o), Flags: kubeletFlags(o)},
		},
	}
	doc, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("rendering NodeConfig: %w", err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", boundary)
	parts, err := customParts(o.Custom)
	if err != nil {
		return "", err
	}
	// The node class's parts go first so ours, merged last by nodeadm, win
	// on the cluster and registration settings.
	parts = append(parts, part{contentType: nodeConfigContentType, body: "---\n" + string(doc)})
	for _, p := range parts {
		fmt.Fprintf(&buf, "--%s\nContent-Type: %s\n\n%s\n", boundary, p.contentType, strings.TrimRight(p.body, "\n"))
	}
	fmt.Fprintf(&buf, "--%s--\n", boundary)
	return buf.String(), nil
}

func kubeletConfig(o Options) map[string]any {
	k := o.Kubelet
	if k == nil {
		return nil
	}
	cfg := map[string]any{}
	if k.MaxPods != nil {
		cfg["maxPods"] = *k.MaxPods
	}
	if k.PodsPerCore != nil {
		cfg["podsPerCore"] = *k.PodsPerCore
	}
	if len(k.SystemReserved) > 0 {
		cfg["systemReserved"] = k.SystemReserved
	}
	if len(k.KubeReserved) > 0 {
		cfg["kubeReserved"] = k.KubeReserved
	}
	if len(k.EvictionHard) > 0 {
		cfg["evictionHard"] = k.EvictionHard
	}
	if len(k.ClusterDNS) > 0 {
		cfg["clusterDNS"] = k.ClusterDNS
	}
	if len(cfg) == 0 {
		return nil
	}
	return cfg
}

func kubeletFlags(o Options) []string {
	var flags []string
	if len(o.Labels) > 0 {
		flags = append(flags, "--node-labels="+labelsFlag(o.Labels))
	}
	if len(o.Taints) > 0 {
		flags = append(flags, "--register-with-taints="+taintsFlag(o.Taints))
	}
	return flags
}

type part struct {
	contentType string
	body        string
}

// customParts splits the node class's user data into MIME parts: a MIME
// document keeps its parts, a bare NodeConfig becomes a NodeConfig part and
// anything else (a shell script) a shell-script part.
func customParts(custom string) ([]part, error) {
	if strings.TrimSpace(custom) == "" {
		return nil, nil
	}
	if isMIME(custom) {
		return readParts(custom)
	}
	if strings.Contains(custom, "kind: NodeConfig") {
		return []part{{contentType: nodeConfigContentType, body: custom}}, nil
	}
	return []part{{contentType: `text/x-shellscript; charset="us-ascii"`, body: custom}}, nil
}

func isMIME(s string) bool {
	head, _, _ := strings.Cut(s, "\n\n")
	return strings.Contains(strings.ToLower(head), "content-type: multipart/")
}

// readParts parses a multipart/mixed document into its parts.
func readParts(doc string) ([]part, error) {
	doc = strings.ReplaceAll(doc, "\r\n", "\n")
	head, body, ok := strings.Cut(doc, "\n\n")
	if !ok {
		return nil, fmt.Errorf("MIME user data has no body")
	}
	hdr, err := textproto.NewReader(bufioReader(head + "\n\n")).ReadMIMEHeader()
	if err != nil {
		return nil, fmt.Errorf("reading MIME header: %w", err)
	}
	_, params, err := mime.ParseMediaType(hdr.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("reading MIME content type: %w", err)
	}
	r := multipart.NewReader(strings.NewReader(body), params["boundary"])
	var parts []part
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part: %w", err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading MIME part: %w", err)
		}
		parts = append(parts, part{contentType: p.Header.Get("Content-Type"), body: string(b)})
	}
}
