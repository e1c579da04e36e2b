package main

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// newRegistry serves an in-memory OCI registry on loopback; it returns the
// host:port to push to.
func newRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestPushSkopeo pushes the tarball with the command docs/install.md
// documents, `skopeo copy --all oci-archive:… docker://…:<tag>` (plus
// --dest-tls-verify=false for the test's plain-HTTP registry), then pulls the
// tag for each platform.
func TestPushSkopeo(t *testing.T) {
	skopeo, err := exec.LookPath("skopeo")
	if err != nil {
		t.Fatal("skopeo is not installed: this test runs the push command docs/install.md documents (Debian/Ubuntu: apt-get install -y skopeo)")
	}
	tarball := buildImage(t)
	ref := newRegistry(t) + "/nodesmith/controller:" + testTag
	out, err := exec.Command(skopeo, "copy", "--all", "--dest-tls-verify=false",
		"oci-archive:"+tarball, "docker://"+ref).CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo copy --all: %v\n%s", err, out)
	}
	checkPulled(t, ref)
}

// TestPushCrane pushes the layout as `crane push <layout dir> <ref>` does
// (go-containerregistry's remote): a layout whose index.json has one entry
// is pushed as that entry, here the multi-platform index.
func TestPushCrane(t *testing.T) {
	dir := t.TempDir()
	untar(t, buildImage(t), dir)
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || !tm.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("crane push needs one entry in index.json, an index to push all platforms; got %+v", tm.Manifests)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	ref := newRegistry(t) + "/nodesmith/controller:" + testTag
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatalf("pushing the index: %v", err)
	}
	checkPulled(t, ref)
}

// checkPulled pulls the tag as a kubelet on each platform would and checks
// what it would run: the entrypoint, a numeric non-root user, the version
// label and annotations, and the binary (its --version where it can run).
func checkPulled(t *testing.T, ref string) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatalf("getting %s: %v", ref, err)
	}
	if !desc.MediaType.IsIndex() {
		t.Fatalf("%s is a %s, want a multi-platform index", ref, desc.MediaType)
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	for _, d := range im.Manifests {
		if d.Platform != nil {
			archs = append(archs, d.Platform.OS+"/"+d.Platform.Architecture)
		}
	}
	if !slices.Equal(archs, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("the pushed tag carries %v, want linux/amd64 and linux/arm64", archs)
	}
	for _, p := range testPlatforms {
		t.Run(p.Arch, func(t *testing.T) {
			img, err := remote.Image(r, remote.WithPlatform(v1.Platform{OS: p.OS, Architecture: p.Arch}))
			if err != nil {
				t.Fatalf("pulling %s for %s/%s: %v", ref, p.OS, p.Arch, err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != p.OS || cf.Architecture != p.Arch {
				t.Errorf("config says %s/%s", cf.OS, cf.Architecture)
			}
			if !slices.Equal(cf.Config.Entrypoint, []string{Entrypoint}) {
				t.Errorf("entrypoint %q, want [%s] (the chart's command)", cf.Config.Entrypoint, Entrypoint)
			}
			if want := fmt.Sprintf("%d:%d", UID, UID); cf.Config.User != want {
				t.Errorf("user %q, want the numeric non-root %s (runAsNonRoot needs a numeric id)", cf.Config.User, want)
			}
			for k, want := range map[string]string{AnnotationVersion: testVersion, AnnotationRevision: testRevision, AnnotationSource: Source} {
				if cf.Config.Labels[k] != want {
					t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], want)
				}
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if m.Annotations[AnnotationVersion] != testVersion || m.Annotations[AnnotationRevision] != testRevision {
				t.Errorf("manifest annotations %v, want version %s and revision %s", m.Annotations, testVersion, testRevision)
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
			checkBinary(t, controllerBinary(t, rc), p.Arch)
		})
	}
}
