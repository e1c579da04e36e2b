package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The unprivileged user the image runs as (the chart's runAsUser).
const (
	UID        = 65532
	Entrypoint = "/controller"
	Source     = "https://github.com/nodesmith/nodesmith"
)

// The OCI annotation and label keys the image carries.
const (
	AnnotationVersion  = "org.opencontainers.image.version"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationRefName  = "org.opencontainers.image.ref.name"
)

// Platform is one os/arch to build for.
type Platform struct{ OS, Arch string }

// Options of one build.
type Options struct {
	Out       string
	Platforms []Platform
	Tag       string
	// Version and Revision are stamped into the binary (pkg/version) and
	// carried as OCI annotations and config labels; Date is the commit time.
	Version, Revision, Date string
	// Package is the Go package of the binary.
	Package string
	// Trimpath builds with -trimpath (make image does, for reproducible
	// binaries); the test leaves it off so it reuses the test build cache.
	Trimpath bool
}

// epoch keeps the image reproducible: the same sources give the same digest.
var epoch = time.Unix(0, 0).UTC()

// Build compiles the binary per platform, assembles the images and writes
// them as an OCI layout tarball of the shape registries and tools expect of
// a multi-platform image: index.json names one image index (tagged through
// its ref.name annotation), and that index lists one manifest per platform.
// skopeo copy --all and crane copy it whole; an index.json listing the
// platform manifests directly made skopeo ask which image to copy.
func Build(o Options) error {
	work, err := os.MkdirTemp("", "nodesmith-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		bin := filepath.Join(work, p.Arch, "controller")
		if err := compile(o.Package, bin, p, o); err != nil {
			return err
		}
		img, err := image(bin, p, o)
		if err != nil {
			return fmt.Errorf("assembling the %s/%s image: %w", p.OS, p.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch},
		}})
	}
	idx, ok := mutate.Annotations(idx, o.annotations()).(v1.ImageIndex)
	if !ok {
		return fmt.Errorf("annotating the image index")
	}
	refAnn := o.annotations()
	refAnn[AnnotationRefName] = o.Tag
	top := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: idx, Descriptor: v1.Descriptor{Annotations: refAnn}})
	dir := filepath.Join(work, "layout")
	if _, err := layout.Write(dir, top); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return err
	}
	return tarDir(dir, o.Out)
}

// annotations are the version, revision and source, on every manifest and index.
func (o Options) annotations() map[string]string {
	a := map[string]string{AnnotationSource: Source}
	if o.Version != "" {
		a[AnnotationVersion] = o.Version
	}
	if o.Revision != "" {
		a[AnnotationRevision] = o.Revision
	}
	return a
}

// ldflags strip the binary and stamp pkg/version.
func (o Options) ldflags() string {
	flags := "-s -w"
	for _, kv := range [][2]string{{"version", o.Version}, {"commit", o.Revision}, {"date", o.Date}} {
		if kv[1] != "" {
			flags += fmt.Sprintf(" -X github.com/nodesmith/nodesmith/pkg/version.%s=%s", kv[0], kv[1])
		}
	}
	return flags
}

func compile(pkg, out string, p Platform, o Options) error {
	args := []string{"build", "-ldflags", o.ldflags(), "-o", out}
	if o.Trimpath {
		args = append(args, "-trimpath")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s/%s: %w", pkg, p.OS, p.Arch, err)
	}
	return nil
}

// image is scratch plus one layer: the binary, and passwd/group files that
// name the unprivileged user, so tools inside and outside see a name.
func image(bin string, p Platform, o Options) (v1.Image, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name string
		mode int64
		body []byte
	}{
		{"etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID))},
		{"etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID))},
		{Entrypoint[1:], 0o755, exe},
	}
	if err := tw.WriteHeader(&tar.Header{Name: "etc/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: epoch}); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg, ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = p.OS, p.Arch, v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = o.annotations()
	cf.Config.Labels["org.opencontainers.image.title"] = "nodesmith-controller"
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	annotated, ok := mutate.Annotations(img, o.annotations()).(v1.Image)
	if !ok {
		return nil, fmt.Errorf("annotating the image manifest")
	}
	return annotated, nil
}

// tarDir writes dir's files into a tarball, sorted and with fixed times.
func tarDir(dir, out string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(body)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
