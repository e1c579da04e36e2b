package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// untar extracts a tarball of regular files into dir.
func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImage builds the controller image for this machine's architecture
// and checks what a kubelet would run: a non-root user, /controller as
// entrypoint, and a static binary for the platform.
func TestImage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "controller.oci.tar")
	p := Platform{OS: "linux", Arch: runtime.GOARCH}
	if err := Build(Options{Out: out, Platforms: []Platform{p}, Tag: "test", Package: "github.com/nodesmith/nodesmith/cmd/controller"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	untar(t, out, dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("the tarball is not an OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || im.Manifests[0].Platform.Architecture != p.Arch {
		t.Fatalf("index manifests %+v, want one for %s", im.Manifests, p.Arch)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want the numeric non-root 65532:65532 (runAsNonRoot needs a numeric id)", cf.Config.User)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/controller"}) || cf.OS != "linux" || cf.Architecture != p.Arch {
		t.Errorf("entrypoint %q os %s arch %s", cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v: want one on scratch", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var exe []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "controller" {
			if h.Mode&0o111 == 0 || h.Uid != 0 {
				t.Errorf("/controller mode %o uid %d: want root-owned and executable", h.Mode, h.Uid)
			}
			exe, _ = io.ReadAll(tr)
		}
	}
	if exe == nil {
		t.Fatal("the layer has no /controller")
	}
	bin, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		t.Fatalf("/controller is not an ELF binary: %v", err)
	}
	for _, prog := range bin.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Error("/controller is dynamically linked: a scratch image has no loader")
		}
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Arch]
	if bin.Machine != want {
		t.Errorf("/controller is for %v, want %v", bin.Machine, want)
	}
}
