// Command image assembles the controller's container image as an OCI image
// layout in a tarball, without Docker or a registry: a scratch image holding
// the static controller binary (CGO off; CA roots are compiled in through
// golang.org/x/crypto/x509roots/fallback, so there is no /etc/ssl), run as
// the unprivileged user 65532 with /controller as entrypoint — the command
// the Helm chart runs. With several platforms it writes one image per
// platform under one multi-platform index, which index.json names.
//
//	go run ./hack/image --out bin/nodesmith-controller.oci.tar [--platforms linux/amd64,linux/arm64] \
//	  [--tag v0.1.0] [--version v0.1.0] [--revision <git commit>] [--date <commit time>]
//
// The version and revision are stamped into the binary (its --version) and
// carried as the org.opencontainers.image.version and .revision annotations
// and labels. Push it with any OCI tool, e.g.
// `skopeo copy --all oci-archive:bin/nodesmith-controller.oci.tar docker://<registry>/nodesmith/controller:<tag>`.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	out := flag.String("out", "bin/nodesmith-controller.oci.tar", "the OCI layout tarball to write")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch to build for")
	tag := flag.String("tag", "dev", "the org.opencontainers.image.ref.name annotation of the image index in index.json")
	version := flag.String("version", "", "the version stamped into the binary and the image's annotations and labels")
	revision := flag.String("revision", "", "the Git commit, stamped likewise")
	date := flag.String("date", "", "the commit's time (RFC 3339), stamped into the binary")
	flag.Parse()
	var ps []Platform
	for _, p := range strings.Split(*platforms, ",") {
		os_, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os_ != "linux" {
			fmt.Fprintf(os.Stderr, "image: platform %q: want linux/<arch>\n", p)
			os.Exit(2)
		}
		ps = append(ps, Platform{OS: os_, Arch: arch})
	}
	if err := Build(Options{Out: *out, Platforms: ps, Tag: *tag, Version: *version, Revision: *revision, Date: *date, Package: "github.com/nodesmith/nodesmith/cmd/controller", Trimpath: true}); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}
