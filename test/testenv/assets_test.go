package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAssetsDir(t *testing.T) {
	full := t.TempDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(full, bin), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := t.TempDir()
	cached := filepath.Join(cache, "k8s-v1.37.2-etcd-v3.7.0")
	if err := os.MkdirAll(cached, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cached, "kube-apiserver"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cached, "etcd"), nil, 0o644); err != nil { // not executable
		t.Fatal(err)
	}
	tests := []struct {
		name, assets, cache string
		want, wantErr       string
	}{
		{name: "KUBEBUILDER_ASSETS wins", assets: full, cache: cache, want: full},
		{name: "empty KUBEBUILDER_ASSETS folder", assets: t.TempDir(), cache: cache,
			wantErr: "kube-apiserver not found in"},
		{name: "falls back to the tool cache", cache: cache,
			wantErr: "etcd not found in " + cached + " (run make tools"},
		{name: "nothing built", cache: t.TempDir(), wantErr: "run make tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBEBUILDER_ASSETS", tt.assets)
			t.Setenv("NODESMITH_CACHE", tt.cache)
			got, err := AssetsDir()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("AssetsDir() = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("AssetsDir() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestHelmPath(t *testing.T) {
	cache := t.TempDir()
	bin := filepath.Join(cache, "helm-v3.22.0", "helm")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, cache, want, wantErr string
	}{
		{name: "from the cache", cache: cache, want: bin},
		{name: "NODESMITH_HELM wins", env: bin, cache: t.TempDir(), want: bin},
		{name: "missing", cache: t.TempDir(), wantErr: "(run make tools, or tools/build.sh helm)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NODESMITH_HELM", tt.env)
			t.Setenv("NODESMITH_CACHE", tt.cache)
			got, err := HelmPath()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("HelmPath() = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("HelmPath() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestRepoRootHoldsTheCRDs(t *testing.T) {
	entries, err := os.ReadDir(CRDDir())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"autoscaling.x-k8s.io_capacitybuffers.yaml", "autoscaling.x-k8s.io_provisioningrequests.yaml",
		"aws.nodesmith.sh_ec2nodeclasses.yaml", "nodesmith.sh_commitments.yaml", "nodesmith.sh_nodeclaims.yaml",
		"nodesmith.sh_nodeoverlays.yaml", "nodesmith.sh_nodepools.yaml",
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s holds %v, want the %d CRDs %v", CRDDir(), got, len(want), want)
	}
}

func TestKwokPath(t *testing.T) {
	cache := t.TempDir()
	bin := filepath.Join(cache, "kwok-v0.8.0", "kwok")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NODESMITH_KWOK", "")
	t.Setenv("NODESMITH_CACHE", cache)
	if got, err := KwokPath(); err != nil || got != bin {
		t.Fatalf("KwokPath() = %q, %v; want %q", got, err, bin)
	}
	t.Setenv("NODESMITH_CACHE", t.TempDir())
	if _, err := KwokPath(); err == nil || !strings.Contains(err.Error(), "(run make tools, or tools/build.sh kwok)") {
		t.Fatalf("KwokPath() with nothing built: %v; want the fix named", err)
	}
}

func TestRepoRootFromWorkingDirectory(t *testing.T) {
	root := RepoRoot()
	if !isCheckout(root) {
		t.Fatalf("RepoRoot() = %s, not a Nodesmith checkout", root)
	}
	if isCheckout(t.TempDir()) {
		t.Fatal("an empty folder counts as a checkout")
	}
}
