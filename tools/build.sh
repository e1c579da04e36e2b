#!/usr/bin/env bash
# build.sh builds the test bed's tools from source through the Go module proxy
# (no binary can be downloaded on our machines) and caches them outside the
# clone, keyed by version, so later runs and CI on the same machine reuse them.
#
#   tools/build.sh [tool ...]   tools: k8s controller-gen kwok helm benchstat (default: all)
#   tools/build.sh --path TOOL  print the folder that holds TOOL's binaries
#
# Cache: ${NODESMITH_CACHE:-~/.cache/nodesmith}/<tool>-<version>/
set -euo pipefail

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
CONTROLLER_GEN_VERSION=v0.23.0
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.22.0
BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NODESMITH_CACHE:-$HOME/.cache/nodesmith}

dir_of() {
  case "$1" in
    k8s) echo "$cache/k8s-$K8S_VERSION-etcd-$ETCD_VERSION" ;;
    controller-gen) echo "$cache/controller-gen-$CONTROLLER_GEN_VERSION" ;;
    kwok) echo "$cache/kwok-$KWOK_VERSION" ;;
    helm) echo "$cache/helm-$HELM_VERSION" ;;
    benchstat) echo "$cache/benchstat-$BENCHSTAT_VERSION" ;;
    *) echo "unknown tool $1" >&2; return 2 ;;
  esac
}

# finish DIR marks a tool folder complete. Binaries are written as NAME.tmp and
# renamed, and .complete comes last, so an interrupted build never leaves a
# half-filled cache that looks complete.
finish() { touch "$1/.complete"; }

# started/built log with UTC timestamps and the wall time of each build, so a
# slow CI run says which tool it waited for.
started() { t0=$SECONDS; echo "$(date -u +%H:%M:%S) building $*" >&2; }
built() { echo "$(date -u +%H:%M:%S) built $1 in $((SECONDS - t0))s" >&2; }

build_k8s() {
  local out; out=$(dir_of k8s)
  [ -f "$out/.complete" ] && return 0
  mkdir -p "$out"
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
  (cd "$here" &&
    for c in kube-apiserver kube-scheduler kube-controller-manager; do
      [ -x "$out/$c" ] || { started "$c $K8S_VERSION (slow the first time: ~20 CPU-minutes for the apiserver)"
        go build -trimpath -ldflags "$ld" -o "$out/$c.tmp" "k8s.io/kubernetes/cmd/$c" && mv "$out/$c.tmp" "$out/$c" && built "$c"; }
    done
    [ -x "$out/etcd" ] || { started "etcd $ETCD_VERSION"
      go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" ./etcd && mv "$out/etcd.tmp" "$out/etcd" && built etcd; })
  if [ -x /usr/bin/kubectl ] && [ ! -e "$out/kubectl" ]; then ln -s /usr/bin/kubectl "$out/kubectl"; fi
  finish "$out"
}

go_install() { # tool version pkg [ldflags]
  local out; out=$(dir_of "$1")
  [ -f "$out/.complete" ] && return 0
  mkdir -p "$out"
  started "$1 $2"
  GOBIN="$out" GOFLAGS=-buildvcs=false go install -trimpath -ldflags "${4:-}" "$3@$2"
  built "$1"
  finish "$out"
}

build() {
  case "$1" in
    k8s) build_k8s ;;
    controller-gen) go_install controller-gen "$CONTROLLER_GEN_VERSION" sigs.k8s.io/controller-tools/cmd/controller-gen ;;
    kwok) go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok "-s -w" ;;
    helm) go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm "-s -w -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37 -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" ;;
    benchstat) go_install benchstat "$BENCHSTAT_VERSION" golang.org/x/perf/cmd/benchstat ;;
    *) echo "unknown tool $1" >&2; return 2 ;;
  esac
}

if [ "${1:-}" = "--path" ]; then dir_of "$2"; exit; fi
mkdir -p "$cache"
tools=("$@"); [ ${#tools[@]} -gt 0 ] || tools=(k8s controller-gen kwok helm benchstat)
# One builder at a time per machine: a second caller waits, then finds the cache full.
exec 9>"$cache/.build.lock"
flock 9
for t in "${tools[@]}"; do build "$t"; done
