// Package trial runs the paths a new user follows, as the docs write them,
// with the real binaries: `nodesmith lab up` (docs/try-it.md), a NodePool
// applied with kubectl, a Deployment scaled, nodes Ready, `nodesmith
// explain`, `nodesmith lab down` leaving no process behind; and the
// migration guide's steps (docs/migrate-from-karpenter.md) on that lab.
//
// It needs the lab's tools (tools/build.sh) and kubectl; without them it
// fails saying how to build them. Test-only package: no production code
// imports it.
package trial
