// Package version says which build of Nodesmith is running: the version and
// commit both binaries print with --version and the controller logs at start.
//
// A release build stamps them with -ldflags (make build, make image and make
// release do):
//
//	-X github.com/nodesmith/nodesmith/pkg/version.version=v0.1.0
//	-X github.com/nodesmith/nodesmith/pkg/version.commit=<git revision>
//	-X github.com/nodesmith/nodesmith/pkg/version.date=<commit time, RFC 3339>
//
// Without them the Go build information is read: the module version (set for
// `go install …@v0.1.0`) and the vcs.revision, vcs.time and vcs.modified
// settings the go command records when it builds inside a Git checkout with
// -buildvcs (the default unless GOFLAGS turns it off).
//
// It imports only the standard library.
package version
