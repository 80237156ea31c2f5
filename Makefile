# gitpeer — build, test and demo entry points. See README.md.
SHELL := /bin/bash
export GOTOOLCHAIN := local

# Kubernetes and etcd versions come from the tools module so there is one source of truth.
K8S_VERSION  := $(shell awk '$$1=="k8s.io/kubernetes" && NF>1 {print $$2; exit}' test/tools/go.mod)
ETCD_VERSION := $(shell awk '$$1=="go.etcd.io/etcd/server/v3" && NF>1 {print $$2; exit}' test/tools/go.mod)
# Built test binaries are cached here (gitignored), keyed by version so a bump rebuilds.
TOOLS_BIN ?= $(CURDIR)/.cache/tools/k8s-$(K8S_VERSION)-etcd-$(ETCD_VERSION)
export GITPEER_TOOLS_BIN := $(TOOLS_BIN)
# kubectl, of the same version: the quickstart test (test/quickstart) runs docs/quickstart.md's commands.
TOOLS := $(TOOLS_BIN)/kube-apiserver $(TOOLS_BIN)/kube-controller-manager $(TOOLS_BIN)/etcd $(TOOLS_BIN)/kubectl
# Gitea, the real forge of the pull-request tests (test/gitea), from the tools module
# test/giteatools (Gitea's own replace lines) with cgo sqlite. It reads its locales and templates
# from its module directory in the module cache (STATIC_ROOT_PATH), which the build downloads.
GITEA_VERSION := $(shell awk '$$1=="code.gitea.io/gitea" {print $$2; exit}' test/giteatools/go.mod)
GITEA := $(CURDIR)/.cache/gitea/gitea-$(GITEA_VERSION)
GITEA_TAGS := sqlite sqlite_unlock_notify
export GITPEER_GITEA := $(GITEA)
export GITPEER_GITEA_ROOT := $(shell go env GOMODCACHE)/code.gitea.io/gitea@$(GITEA_VERSION)
# liqo-auth-harness (test/liqotools): Liqo's own authentication module and Tenant webhooks, built
# from Liqo's source, which is not on the Go module proxy. LIQO_SRC is Liqo's source tree: by default
# ../shared/liqo-$(LIQO_VERSION) beside the repository when present, otherwise a shallow clone of
# the tag into .cache/liqo/ (needs the internet). The build uses a copy of test/liqotools/go.mod
# (-modfile) whose replace points at LIQO_SRC, so the committed go.mod never changes. For another
# Liqo checkout set both: make tools LIQO_SRC=/path/to/liqo LIQO_VERSION=v1.x.y. The same module
# builds Liqo's own CRD replicator (its main package cmd/crd-replicator; its internal packages cannot
# be imported from here), which carries Renews and ResourceSlices between two test clusters.
LIQO_VERSION ?= $(shell awk '$$1=="github.com/liqotech/liqo" && NF>1 {print $$2; exit}' test/liqotools/go.mod)
LIQO_SRC ?= $(or $(wildcard $(abspath $(CURDIR)/../shared/liqo-$(LIQO_VERSION))),$(CURDIR)/.cache/liqo/src-$(LIQO_VERSION))
LIQO_HARNESS := $(CURDIR)/.cache/liqo/$(LIQO_VERSION)/liqo-auth-harness
export GITPEER_LIQO_HARNESS := $(LIQO_HARNESS)
LIQO_REPLICATOR := $(CURDIR)/.cache/liqo/$(LIQO_VERSION)/liqo-crd-replicator
export GITPEER_LIQO_REPLICATOR := $(LIQO_REPLICATOR)
export GITPEER_LIQO_SRC := $(abspath $(LIQO_SRC))
K8S_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION)))

# The release version is in VERSION (0.1.0; image tag v0.1.0). A build of exactly the clean commit
# tagged v$(RELEASE_VERSION) is stamped $(RELEASE_VERSION); any other build
# $(RELEASE_VERSION)-<commit>[-dirty], e.g. 0.1.0-41e8d81-dirty. Override with `make VERSION=...`.
RELEASE_VERSION := $(shell cat VERSION)
ifeq ($(origin VERSION),undefined)
VERSION := $(if $(filter v$(RELEASE_VERSION),$(shell git describe --tags --exact-match --dirty 2>/dev/null)),$(RELEASE_VERSION),$(RELEASE_VERSION)-$(or $(shell git describe --always --dirty --exclude='*' 2>/dev/null),dev))
endif

.PHONY: tools test deps demo build image dist linux-only
# Everything the tests need: the control plane's binaries (TOOLS), Gitea, Liqo's harness and replicator.
tools: $(TOOLS) $(GITEA) $(LIQO_HARNESS) $(LIQO_REPLICATOR)

$(TOOLS_BIN)/kube-apiserver $(TOOLS_BIN)/kube-controller-manager $(TOOLS_BIN)/kubectl:
	@mkdir -p $(TOOLS_BIN)
	@echo ">> building $(@F) $(K8S_VERSION) from the Go module proxy (first time only, takes minutes)"
	cd test/tools && go build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(@F)

$(TOOLS_BIN)/etcd:
	@mkdir -p $(TOOLS_BIN)
	@echo ">> building etcd $(ETCD_VERSION) from the Go module proxy (first time only)"
	cd test/tools && go build -trimpath -ldflags '-s -w' -o $@ go.etcd.io/etcd/server/v3

$(GITEA): | deps
	@mkdir -p $(@D)
	@echo ">> building gitea $(GITEA_VERSION) from the Go module proxy (first time only, takes minutes)"
	cd test/giteatools && CGO_ENABLED=1 go build -trimpath -tags '$(GITEA_TAGS)' \
		-ldflags "-s -w -X main.Version=$(patsubst v%,%,$(GITEA_VERSION)) -X 'main.Tags=$(GITEA_TAGS)'" -o $@ code.gitea.io/gitea

# Every test in the repository: unit tests and the ginkgo suites, which start real
# control planes (from `make tools`) and real Git servers.
GO_TEST_FLAGS ?= -timeout 60m
# The image test (test/image, its own module) checks what `make image` built; the chart tests
# (chart-test) run in their module.
test: linux-only tools deps image chart-test
	go test $(GO_TEST_FLAGS) ./...
	cd test/image && GITPEER_IMAGE_DIR=$(IMAGE_DIR) GITPEER_IMAGE_VERSION=$(VERSION) \
		GITPEER_IMAGE_PLATFORMS="$(IMAGE_PLATFORMS)" go test $(GO_TEST_FLAGS) ./...

# The test harness (test/process) ties the processes it starts to its own life with Linux's
# parent-death signal: the tests, the demo and the benchmarks run on Linux only. Checked first, so
# another system fails at once rather than after minutes of building.
linux-only:
	@test "$$(uname -s)" = Linux || { echo "this target runs on Linux only (its process harness uses Linux's parent-death signal), not on $$(uname -s): use a Linux machine, VM or container" >&2; exit 1; }

# Programs the tests drive besides Go: git (the Git server and the reviewer), ssh-keygen (git's SSH
# commit signing), gcc (cgo for the Gitea build), and the CA bundle `make image` copies into the image. Installed from Debian when
# missing. (The config/ test uses kubectl when present.)
deps:
	@missing=""; \
	command -v git >/dev/null || missing="$$missing git"; \
	command -v ssh-keygen >/dev/null || missing="$$missing openssh-client"; \
	command -v gcc >/dev/null || missing="$$missing gcc libc6-dev"; \
	test -s $(CA_BUNDLE) || missing="$$missing ca-certificates"; \
	if [ -n "$$missing" ]; then echo ">> installing$$missing"; apt-get update -qq && apt-get install -y -qq $$missing; fi

# Regenerates the deepcopy functions in apis/ and the CRDs in config/crd/bases with controller-gen,
# pinned by the tools module test/codegen (so gitpeer itself never depends on controller-tools),
# then the field table of docs/configuration.md from the CRD (test/crddoc).
# Built into .cache/codegen, not .cache/tools, whose single entry the control-plane harness finds.
CONTROLLER_GEN := $(CURDIR)/.cache/codegen/controller-gen-$(shell awk '$$1=="sigs.k8s.io/controller-tools" {print $$2; exit}' test/codegen/go.mod)
.PHONY: generate
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./apis/...
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:artifacts:config=config/crd/bases
	gofmt -l -w apis
	go run ./test/crddoc

$(CONTROLLER_GEN):
	@mkdir -p $(@D)
	cd test/codegen && go build -trimpath -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

# The gitpeer binary as the image ships it (static, without symbol table and DWARF: the agent's
# resident memory is measured on it, see docs/benchmarks.md); go's build cache makes a rebuild with no
# change instant. A cgo build also exports every symbol for the `plugin` package kustomize links,
# which doubles the binary and the pages of it the agent keeps resident (71 MiB instead of 40 idle).
GO_BUILD := CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)"
build:
	$(GO_BUILD) -o bin/gitpeer ./cmd/gitpeer

# $(call cross_build,PLATFORMS,PREFIX,SUFFIX) builds gitpeer for each os/arch of PLATFORMS into
# PREFIX<os>-<arch>SUFFIX.
cross_build = for p in $(1); do \
		echo ">> building gitpeer $(VERSION) for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p\#*/} $(GO_BUILD) -o $(2)$${p/\//-}$(3) ./cmd/gitpeer || exit 1; \
	done

# The CLI binaries of a release, as the release workflow attaches them: dist/gitpeer-<os>-<arch>
# for DIST_PLATFORMS and their checksums, dist/SHA256SUMS (`sha256sum --check` format).
DIST_DIR ?= $(CURDIR)/dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SHA256SUM := $(if $(shell command -v sha256sum),sha256sum,shasum -a 256)
dist:
	@rm -rf $(DIST_DIR) && mkdir -p $(DIST_DIR)
	@$(call cross_build,$(DIST_PLATFORMS),$(DIST_DIR)/gitpeer-,)
	cd $(DIST_DIR) && $(SHA256SUM) gitpeer-* > SHA256SUMS

# The release notes of VERSION (the GitHub release's body): its section of CHANGELOG.md, without
# the heading. Fails when CHANGELOG.md has no section for it.
.PHONY: release-notes
release-notes:
	@awk -v h='## [$(RELEASE_VERSION)]' 'index($$0, "## [") == 1 { on = index($$0, h) == 1; found = found || on; next } \
		/^\[[^]]*\]: / { on = 0 } on { print } END { exit !found }' CHANGELOG.md

# The container image the Dockerfile describes, built without a daemon (test/image, with
# go-containerregistry): static binaries for IMAGE_PLATFORMS, over scratch with Debian's CA bundle
# and the nonroot user. Writes .cache/image/oci (an OCI image layout: one index, tagged
# v$(VERSION)) and .cache/image/gitpeer-v$(VERSION)-<os>-<arch>.tar (`docker load`, `kind load
# image-archive`). Created at the last commit's time, so a rebuild of a commit gives the same digests.
IMAGE_DIR := $(CURDIR)/.cache/image
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
SOURCE_DATE_EPOCH ?= $(or $(shell git log -1 --format=%ct 2>/dev/null),0)
image: deps
	@rm -rf $(IMAGE_DIR)
	@$(call cross_build,$(IMAGE_PLATFORMS),$(IMAGE_DIR)/bin/,/gitpeer)
	cd test/image && go run . -version $(VERSION) -revision $$(git rev-parse HEAD 2>/dev/null) \
		-created $(SOURCE_DATE_EPOCH) -ca $(CA_BUNDLE) -out $(IMAGE_DIR) \
		$(foreach p,$(IMAGE_PLATFORMS),$(p)=$(IMAGE_DIR)/bin/$(subst /,-,$(p))/gitpeer)

# The scale benchmark (test/scale, docs/benchmarks.md): the agent binary as provider for N consumers
# simulated in the benchmark, on a real control plane and Git server. Not part of `make test`
# (which runs it with 5 consumers). Prints a table; writes the figures to .cache/bench/scale-N.json
# and the agent's log beside it. More options: BENCH_SCALE_FLAGS (go run ./test/scale -h).
N ?= 100
BENCH_DIR := $(CURDIR)/.cache/bench
.PHONY: bench bench-scale bench-idle bench-liqo bench-gitsync bench-controlplane
bench-scale: linux-only $(TOOLS) build
	@mkdir -p $(BENCH_DIR)
	go run ./test/scale -n $(N) -agent bin/gitpeer -json $(BENCH_DIR)/scale-$(N).json \
		-agent-log $(BENCH_DIR)/scale-$(N)-agent.log $(BENCH_SCALE_FLAGS)

# What an idle provider costs (docs/benchmarks.md, issue #27): IDLE_N issued peerings, then, with
# spec.interval set to its default (1m), the agent's CPU time over 6 minutes with a full resync
# every 3 (20 an hour: an upper bound of the default period, 6 an hour), scaled to an hour.
# Writes .cache/bench/idle-IDLE_N.json.
IDLE_N ?= 10000
bench-idle: linux-only $(TOOLS) build
	@mkdir -p $(BENCH_DIR)
	go run ./test/scale -n $(IDLE_N) -agent bin/gitpeer -json $(BENCH_DIR)/idle-$(IDLE_N).json \
		-agent-log $(BENCH_DIR)/idle-$(IDLE_N)-agent.log -idle 6m -idle-interval 1m -timeout 60m \
		-agent-flags --full-resync-period=3m $(BENCH_SCALE_FLAGS)

# What Liqo's own tenant controller costs in the same place (test/liqobench, docs/benchmarks.md, issue
# #27): Liqo's authentication module (LIQO_HARNESS, with GITPEER_LIQO_HARNESS and GITPEER_LIQO_SRC
# exported above, as for `make test`) as provider on the same control plane, N Tenants applied at once
# until every certificate is issued, against the CSR signer's floor. Not part of `make test` (which runs
# it with 5). Writes .cache/bench/liqo-N.json and the harness's log beside it. More options:
# BENCH_LIQO_FLAGS, e.g. -kcm-default-limits (go run ./test/liqobench -h).
bench-liqo: linux-only $(TOOLS) $(LIQO_HARNESS)
	@mkdir -p $(BENCH_DIR)
	go run ./test/liqobench -n $(N) -json $(BENCH_DIR)/liqo-$(N).json \
		-harness-log $(BENCH_DIR)/liqo-$(N)-harness.log $(BENCH_LIQO_FLAGS)

# gitsync against the git command line (gitsync/BENCHMARKS.md).
bench-gitsync:
	go test ./gitsync/ -run '^$$' -bench . -benchtime 10x -benchmem

# How long one test control plane takes to become ready.
bench-controlplane: linux-only $(TOOLS)
	go test ./test/controlplane/ -run '^$$' -bench Start -benchtime 3x

# Every benchmark.
bench: bench-gitsync bench-controlplane bench-scale bench-liqo

# The whole handshake locally: two control planes, a Git server, two agents. It needs only the
# control plane's binaries (TOOLS), not Gitea; with DEMO_FLAGS=--liqo also Liqo's authentication
# module (LIQO_HARNESS, built from Liqo's source the first time).
demo: linux-only $(TOOLS) build $(if $(findstring --liqo,$(DEMO_FLAGS)),$(LIQO_HARNESS))
	go run ./test/demo --gitpeer bin/gitpeer $(DEMO_FLAGS)

# The Helm chart charts/gitpeer. Its CRDs, RBAC, admission policy and tenant role are generated
# from config/ (`make chart`, test/chart/chartgen); its Deployment and Services are templates whose
# default values the chart test checks against config/default. helm and the Helm SDK come from the
# tools module test/chart, so gitpeer itself never depends on Helm.
HELM_VERSION := $(shell awk '$$1=="helm.sh/helm/v3" {print $$2; exit}' test/chart/go.mod)
HELM := $(CURDIR)/.cache/helm/helm-$(HELM_VERSION)
export GITPEER_HELM := $(HELM)
.PHONY: chart helm-lint chart-test
chart:
	cd test/chart && go run ./cmd/chartgen ../../config ../../charts/gitpeer

$(HELM):
	@mkdir -p $(@D)
	@echo ">> building helm $(HELM_VERSION) from the Go module proxy (first time only)"
	cd test/chart && go build -trimpath -ldflags '-s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION)' \
		-o $@ helm.sh/helm/v3/cmd/helm

# Lints with the default values, with every optional part switched on or off, and with every
# optional value set (values.schema.json checks them all).
helm-lint: $(HELM)
	$(HELM) lint --strict charts/gitpeer
	$(HELM) lint --strict charts/gitpeer -f test/chart/testdata/every-value.yaml
	$(HELM) lint --strict charts/gitpeer --set installLiqoCRDs=false,installTenantRole=false,leaderElection.enabled=false \
		--set data.persistence.enabled=true,webhook.ingress.enabled=true,metrics.serviceMonitor.enabled=true

# The chart tests (test/chart, its own module): generated templates up to date, defaults equal to
# config/default, values, and a Helm SDK install and upgrade on a real control plane.
chart-test: tools helm-lint
	cd test/chart && go test $(GO_TEST_FLAGS) ./...

$(abspath $(LIQO_SRC))/go.mod:
	git clone --depth 1 --branch $(LIQO_VERSION) https://github.com/liqotech/liqo.git $(abspath $(LIQO_SRC))

# liqo-build builds package $(1) of test/liqotools into $@ with Liqo at LIQO_SRC; the -modfile copy is
# per target ($@.mod) so the harness and the replicator can build in parallel.
define liqo-build
	@mkdir -p $(@D)
	@echo ">> building $(@F) from Liqo $(LIQO_VERSION) at $(abspath $(LIQO_SRC)) (first time only, takes minutes)"
	cp test/liqotools/go.mod $@.mod && cp test/liqotools/go.sum $@.sum
	cd test/liqotools && go mod edit -modfile=$@.mod -replace=github.com/liqotech/liqo=$(abspath $(LIQO_SRC)) && \
		go build -modfile=$@.mod -mod=mod -trimpath -ldflags '-s -w -X main.liqoVersion=$(LIQO_VERSION)' -o $@ $(1)
endef

$(LIQO_HARNESS): test/liqotools/go.mod test/liqotools/go.sum $(wildcard test/liqotools/liqo-auth-harness/*.go) | $(abspath $(LIQO_SRC))/go.mod
	$(call liqo-build,./liqo-auth-harness)

$(LIQO_REPLICATOR): test/liqotools/go.mod test/liqotools/go.sum | $(abspath $(LIQO_SRC))/go.mod
	$(call liqo-build,github.com/liqotech/liqo/cmd/crd-replicator)
