# Nodesmith. `make run` replays the default scenario in the simulator;
# `make test` is everything CI runs (it builds the test bed's tools itself,
# caching them under ~/.cache/nodesmith so later runs reuse them).
SHELL := /usr/bin/env bash
GO ?= go
# Static binaries everywhere (the image is scratch), and one build cache:
# tests, the lab's controller binary and the image compile with the same
# settings, so the image test (hack/image) reuses what the tests compiled.
export CGO_ENABLED ?= 0
CONTROLLER_GEN = $(shell tools/build.sh --path controller-gen)/controller-gen
K8S_ASSETS = $(shell tools/build.sh --path k8s)
# Packages that decide and must stay pure: no client-go clients, no
# controller-runtime, no AWS SDK (architecture rule 1).
PURE_PKGS ?= $(shell $(GO) list ./pkg/catalog/... ./pkg/scheduling/... ./pkg/lifecycle/... ./pkg/provisioning/... ./pkg/disruption/... ./pkg/providers/aws/plan/... ./pkg/providers/aws/userdata/... ./pkg/simulator/scheduler ./pkg/convert/... ./pkg/cost/... ./pkg/whatif/... ./pkg/interruption/... ./pkg/fakeaws/iampolicy/... 2>/dev/null)
TEST_TIMEOUT ?= 40m
# Platforms of make image (comma-separated os/arch).
PLATFORMS ?= linux/amd64,linux/arm64
# The release version has one source: the chart's version (appVersion must
# equal it; cmd/controller's chart test holds them together).
VERSION ?= $(shell sed -n 's/^version: *//p' charts/nodesmith/Chart.yaml)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
REVISION_DATE ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS = -X github.com/nodesmith/nodesmith/pkg/version.version=$(VERSION) \
  -X github.com/nodesmith/nodesmith/pkg/version.commit=$(REVISION) \
  -X github.com/nodesmith/nodesmith/pkg/version.date=$(REVISION_DATE)

.PHONY: all run test unit perf tools generate verify tidy vet fmt purity build image release bench clean

all: build

## run: replay the default scenario (examples/scenarios/sqs-worker-lab.yaml) into ./out
run:
	$(GO) run ./cmd/nodesmith simulate --out out

## test: everything CI runs
test: tools verify unit

## tools: build (or reuse) kube-apiserver, etcd, kube-scheduler, kube-controller-manager, controller-gen, kwok, helm
tools:
	tools/build.sh

## unit: go test over the whole module with the test bed's binaries
unit:
	KUBEBUILDER_ASSETS=$(K8S_ASSETS) NODESMITH_KWOK=$(shell tools/build.sh --path kwok)/kwok \
	  NODESMITH_HELM=$(shell tools/build.sh --path helm)/helm \
	  $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

## perf: Karpenter's performance scenarios in the lab (test/perf) and the simulator's, build tag perf; prints the table
perf: tools
	KUBEBUILDER_ASSETS=$(K8S_ASSETS) NODESMITH_KWOK=$(shell tools/build.sh --path kwok)/kwok \
	  NODESMITH_HELM=$(shell tools/build.sh --path helm)/helm \
	  $(GO) test -tags perf -count=1 -timeout 180m -run '^TestPerf' -v ./test/perf/... ./pkg/simulator/...

## generate: deepcopy functions and CRDs from the API types
generate:
	tools/build.sh controller-gen
	$(CONTROLLER_GEN) object paths=./apis/...
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:artifacts:config=charts/nodesmith/crds

## verify: generated files current, go.mod tidy, gofmt, go vet, pure packages pure
verify: generate tidy fmt vet purity
	@git diff --exit-code -- apis charts/nodesmith/crds || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- apis charts/nodesmith/crds)" || { echo "untracked generated files: run make generate and commit"; git status --porcelain -- apis charts/nodesmith/crds; exit 1; }

tidy:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy and commit"; exit 1; }

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }

vet:
	$(GO) vet ./...

purity:
	hack/check-purity.sh $(PURE_PKGS)

## build: the binaries into ./bin
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

## image: the controller image as an OCI layout tarball (linux/amd64 and arm64), no Docker or registry needed
image:
	$(GO) run ./hack/image --out bin/nodesmith-controller.oci.tar --platforms $(PLATFORMS) \
	  --tag $(VERSION) --version $(VERSION) --revision $(REVISION) --date $(REVISION_DATE)

## release: into ./dist the chart package (helm package), the image tarball and SHA256SUMS, all of version $(VERSION)
release:
	tools/build.sh helm
	rm -rf dist && mkdir -p dist
	@git diff --quiet HEAD || echo "release: WARNING: the work tree has uncommitted changes; the image's revision says $(REVISION)"
	$(shell tools/build.sh --path helm)/helm package charts/nodesmith --destination dist --version $(VERSION) --app-version $(VERSION)
	$(GO) run ./hack/image --out dist/nodesmith-controller-$(VERSION).oci.tar --platforms $(PLATFORMS) \
	  --tag $(VERSION) --version $(VERSION) --revision $(REVISION) --date $(REVISION_DATE)
	cd dist && sha256sum nodesmith-$(VERSION).tgz nodesmith-controller-$(VERSION).oci.tar > SHA256SUMS
	@cat dist/SHA256SUMS

## bench: the solver, catalog, provider and simulator benchmarks
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./pkg/...

clean:
	rm -rf bin out dist
