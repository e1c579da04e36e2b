#!/usr/bin/env bash
# check-purity.sh PKG...: fails when a decision package imports a Kubernetes
# API client, controller-runtime or the AWS SDK (architecture rule 1).
set -euo pipefail
[ $# -gt 0 ] || { echo "purity: no pure packages found" >&2; exit 1; }
bad=$(go list -deps "$@" | grep -E '^(k8s\.io/client-go/(kubernetes|rest|tools|informers|dynamic|discovery)|sigs\.k8s\.io/controller-runtime|github\.com/aws/aws-sdk-go-v2)' || true)
if [ -n "$bad" ]; then
  echo "pure packages import forbidden dependencies:" >&2
  for p in "$@"; do
    hits=$(go list -deps "$p" | grep -E '^(k8s\.io/client-go/(kubernetes|rest|tools|informers|dynamic|discovery)|sigs\.k8s\.io/controller-runtime|github\.com/aws/aws-sdk-go-v2)' || true)
    [ -z "$hits" ] || echo "  $p: $(echo $hits)" >&2
  done
  exit 1
fi
echo "purity: $# packages import no client-go client, controller-runtime or AWS SDK"
