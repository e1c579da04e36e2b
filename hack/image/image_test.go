package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the test image is stamped with.
const (
	testTag      = "0.0.0-test"
	testVersion  = "0.0.0-test"
	testRevision = "0123456789abcdef0123456789abcdef01234567"
)

var testPlatforms = []Platform{{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}}

var built struct {
	once sync.Once
	path string
	err  error
}

// buildImage builds the two-platform tarball once for the package's tests.
func buildImage(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "nodesmith-image-test-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "controller.oci.tar")
		built.err = Build(Options{Out: built.path, Platforms: testPlatforms, Tag: testTag, Version: testVersion,
			Revision: testRevision, Package: "github.com/nodesmith/nodesmith/cmd/controller"})
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

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

// TestImageLayout checks the tarball's shape: index.json names exactly one
// image index, tagged and annotated, and that index lists one manifest per
// platform. (An index.json listing the platform manifests itself made
// `skopeo copy --all` ask which image to copy.)
func TestImageLayout(t *testing.T) {
	dir := t.TempDir()
	untar(t, buildImage(t), dir)
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("the tarball is not an OCI layout: %v", err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json lists %+v, want one OCI image index", tm.Manifests)
	}
	ann := tm.Manifests[0].Annotations
	for k, want := range map[string]string{AnnotationRefName: testTag, AnnotationVersion: testVersion, AnnotationRevision: testRevision, AnnotationSource: Source} {
		if ann[k] != want {
			t.Errorf("index.json's entry: annotation %s = %q, want %q", k, ann[k], want)
		}
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || im.Annotations[AnnotationVersion] != testVersion || im.Annotations[AnnotationRevision] != testRevision {
		t.Errorf("nested index: media type %s, annotations %v", im.MediaType, im.Annotations)
	}
	var archs []string
	for _, d := range im.Manifests {
		if d.MediaType != types.OCIManifestSchema1 || d.Platform == nil || d.Platform.OS != "linux" {
			t.Errorf("nested index entry %+v: want an OCI image manifest for linux", d)
			continue
		}
		archs = append(archs, d.Platform.Architecture)
	}
	if !slices.Equal(archs, []string{"amd64", "arm64"}) {
		t.Errorf("platforms %v, want amd64 and arm64", archs)
	}
}

// controllerBinary is /controller out of an image layer, checked to be a
// root-owned executable.
func controllerBinary(t *testing.T, layer io.Reader) []byte {
	t.Helper()
	tr := tar.NewReader(layer)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("the layer has no /controller")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "controller" {
			continue
		}
		if h.Mode&0o111 == 0 || h.Uid != 0 {
			t.Errorf("/controller mode %o uid %d: want root-owned and executable", h.Mode, h.Uid)
		}
		exe, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		return exe
	}
}

// checkBinary: a static ELF binary for arch; on this machine's arch it runs
// and its --version names the stamped version and commit.
func checkBinary(t *testing.T, exe []byte, arch string) {
	t.Helper()
	bin, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		t.Fatalf("/controller is not an ELF binary: %v", err)
	}
	for _, prog := range bin.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Error("/controller is dynamically linked: a scratch image has no loader")
		}
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if bin.Machine != want {
		t.Errorf("/controller for %s is for %v, want %v", arch, bin.Machine, want)
	}
	if arch != runtime.GOARCH {
		return
	}
	path := filepath.Join(t.TempDir(), "controller")
	if err := os.WriteFile(path, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("/controller --version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), testVersion) || !strings.Contains(string(out), "commit "+testRevision) {
		t.Errorf("/controller --version printed %q, want version %s and commit %s", out, testVersion, testRevision)
	}
}
