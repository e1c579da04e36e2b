package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// ChartDir is the Helm chart.
func ChartDir() string { return filepath.Join(RepoRoot(), "charts", "nodesmith") }

// RenderChart runs `helm template` on the chart with values (YAML) as
// release "nodesmith" in namespace, offline, and returns the objects in
// the order rendered (CRDs not included). A lab runs the controller under
// the chart's ServiceAccount by applying the ServiceAccount, ClusterRole,
// Role and bindings from here and impersonating
// system:serviceaccount:<namespace>:<serviceaccount>; the Deployment's
// container holds the command line and env to run it with.
func RenderChart(ctx context.Context, namespace, values string) ([]*unstructured.Unstructured, error) {
	bin, err := HelmPath()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "nodesmith-helm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	vf := filepath.Join(home, "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "template", "nodesmith", ChartDir(), "--namespace", namespace, "--values", vf)
	// No user config, cache or repositories: the chart must render offline.
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template: %w: %s", err, errb.String())
	}
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(&out, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding the rendered chart: %w", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
