# iggy-s3-sink — one entry point for building, testing and the demo.
# `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/.bin
GOARCH ?= $(shell $(GO) env GOARCH)
export PATH := $(BIN):$(PATH)
# The SAM CLI reports usage to AWS unless told not to.
export SAM_CLI_TELEMETRY := 0

# Python test tools live in venvs under .bin/, never in the system Python
# (Debian and Ubuntu refuse pip there: externally-managed-environment). A
# venv is named after a checksum of its pins, so changing a pin makes a new
# one beside the old; the SAM CLI pins its own aws-sam-translator and
# cfn-lint, hence a venv of its own. moto has one too, so that make local
# installs moto alone, not the linters beside it.
PY := python3
MOTO_PKGS := moto[server]==5.2.1
PY_PKGS := cfn-lint==1.51.0 aws-sam-translator==1.110.0
SAM_PKGS := aws-sam-cli==1.170.0
pins = $(shell printf '%s' '$(1)' | cksum | cut -d' ' -f1)
MOTO_VENV := $(BIN)/moto-$(call pins,$(MOTO_PKGS))
PY_VENV := $(BIN)/pytools-$(call pins,$(PY_PKGS))
SAM_VENV := $(BIN)/samcli-$(call pins,$(SAM_PKGS))

# The commit for `--version` where the toolchain cannot stamp it (worktrees, -buildvcs=false).
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo +modified)
LDFLAGS := -s -w -X github.com/iggy-s3-sink/iggy-s3-sink/internal/app.buildCommit=$(COMMIT)

.PHONY: all help demo local check test tools py-tools py-moto py-iggy sam-cli aws-cli sam-local parquet-readers iceberg-tools bench-parquet fmt-check vet bench bootstrap build-SinkFunction clean

all: test

## help: list the targets
help:
	@grep -E '^## ' $(MAKEFILE_LIST) | sed -e 's/^## /  /' -e 's/: /\t/' | expand -t 22

## demo: drain sample traffic from an in-process Iggy broker into an in-process S3 (no setup, no network)
# Built without Iceberg (-tags noiceberg), whose libraries (Arrow, Glue) the demo never uses and which
# are most of a cold build, and with the stand-ins (-tags standins: the test broker and an in-memory S3,
# which the poller users deploy does not link).
STANDINS_TAGS := noiceberg,standins
demo:
	@echo "building the poller without Iceberg (the first time takes about 40 s on an idle 2-core machine) ..."
	$(GO) run -tags $(STANDINS_TAGS) ./cmd/poller demo

## local: S3 (versitygw; LOCAL_S3=minio for MinIO), DynamoDB and an Iggy test broker with sample traffic on
## 127.0.0.1 until Ctrl-C; writes local.env. Builds and installs only what it starts, a timed line per step
# The poller is built as for the demo (STANDINS_TAGS) and run from .bin/poller (not `go run`, which
# turns Ctrl-C into an error). LOCAL_STARTED_AT, taken first, lets it count "ready in" from here.
LOCAL_S3 ?= versitygw
LOCAL_S3_BIN := $(if $(filter minio,$(LOCAL_S3)),$(BIN)/minio,$(BIN)/versitygw)
local:
	@export LOCAL_STARTED_AT=$$(date +%s.%N) LOCAL_S3=$(LOCAL_S3); \
	case "$(LOCAL_S3)" in versitygw|minio) ;; *) echo "LOCAL_S3=$(LOCAL_S3): want versitygw (the default) or minio"; exit 2;; esac; \
	$(call step,building the poller without Iceberg into .bin/poller,$(GO) build -tags $(STANDINS_TAGS) -o $(BIN)/poller ./cmd/poller); \
	if ! $(MAKE) -s -q $(LOCAL_S3_BIN) 2>/dev/null; then \
	  $(call step,building $(LOCAL_S3) into .bin/,$(MAKE) -s --no-print-directory $(LOCAL_S3_BIN)); fi; \
	if [ ! -f $(MOTO_VENV)/.complete ]; then \
	  $(call step,installing moto_server into .bin/$(notdir $(MOTO_VENV)) (once),$(MAKE) -s --no-print-directory py-moto); \
	else $(MAKE) -s --no-print-directory py-moto; fi; \
	exec $(BIN)/poller local

# step WHAT,COMMAND (in a recipe's shell): say what runs, run it with its output kept aside (shown only
# when it fails), then print how long it took, so that a long first build is visibly under way.
step = printf '%-68s ' '$(1) ...'; \
	_log=$$(mktemp); _t0=$$(date +%s%N); \
	if ! { $(2); } >$$_log 2>&1; then echo "failed:"; cat $$_log; rm -f $$_log; exit 1; fi; \
	rm -f $$_log; _ds=$$(( ($$(date +%s%N) - _t0) / 100000000 )); printf '%3d.%ds\n' $$((_ds / 10)) $$((_ds % 10))

## check: the quick loop while editing: gofmt, vet, and every test that needs nothing installed (in-process S3,
## DynamoDB and Iggy broker; no -race), ending with one line of counts, skips grouped by reason (V=1 names them;
## make test runs everything)
SUMMARY = $(GO) run ./internal/testkit/cmd/testsummary$(if $(V), -v)
check: fmt-check vet
	set -o pipefail; SINK_CHECK=1 MODEL_SEEDS=20 DRAIN_BACKENDS=inproc $(GO) test -count=1 -parallel 8 -timeout 10m -json ./... | $(SUMMARY)

## test: install tools, check formatting and vet, run every test with -race (the drain's in process, on the broker's
## Iggy 0.9 protocol; a line on skipped tests ends each step), then the drain against versitygw, MinIO and moto_server
## with its 300-seed model test, then its crash matrix and 100 model seeds on Iggy 0.8 and 0.10, then the `sam local`
## workflow (sam-local)
test: tools py-tools py-iggy sam-cli parquet-readers iceberg-tools fmt-check vet
	set -o pipefail; MODEL_SEEDS=40 DRAIN_BACKENDS=inproc $(GO) test -race -count=1 -parallel 8 -timeout 20m -json ./... | $(SUMMARY)
	@echo "the drain against versitygw, MinIO and moto_server, and its model test with 300 seeds (without -race: the in-process runs above had it)"
	set -o pipefail; MODEL_SEEDS=300 DRAIN_BACKENDS=versitygw,minio $(GO) test -count=1 -parallel 12 -timeout 15m -json ./internal/drain | $(SUMMARY)
	@echo "the drain's crash matrix and 100 model seeds on the broker's Iggy 0.8 and 0.10 protocols (the sink finds each out)"
	set -o pipefail; for p in 0.8 0.10; do IGGY_TEST_PROTOCOL=$$p MODEL_SEEDS=100 DRAIN_BACKENDS=inproc $(GO) test -count=1 -parallel 8 -timeout 10m -run 'TestModel|TestCrashAtEveryStep' -json ./internal/drain | $(SUMMARY) || exit 1; done
	@./scripts/sam-local.sh

## sam-local: `sam local invoke` and `sam local start-lambda` against MinIO, moto_server and an Iggy broker in
## Docker (installed and started when missing, as root); skips locally without root or engine, fails in CI
sam-local: tools py-tools sam-cli
	@./scripts/sam-local.sh

## tools: build the pinned Go tool dependencies (versitygw, aws-lambda-rie, minio) into .bin/, side by side
## (one build's module downloads and link overlap another's compiling)
tools:
	@$(MAKE) --no-print-directory -j3 $(BIN)/versitygw $(BIN)/aws-lambda-rie $(BIN)/minio

# The test tools are pinned in a module of their own (tools/go.mod), so the product's go.mod lists
# only what the product links.
$(BIN)/versitygw: tools/go.mod
	$(GO) -C tools build -o $@ github.com/versity/versitygw/cmd/versitygw

$(BIN)/aws-lambda-rie: tools/go.mod
	$(GO) -C tools build -o $@ github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie

# MinIO is a test service only: AGPL-3.0, so it is never imported by the product's code (it is
# not in go.mod) and never shipped. Built once per version; the stamp file rebuilds it when
# MINIO_VERSION changes. Without optimisations (-N -l) the compile takes 31% less CPU (user
# 2m46s instead of 4m01s; about 2 min on 2 cores, after 25 s of module downloads); MinIO's hot
# paths (hashing, erasure coding) are assembly, so the tests do not notice.
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
$(BIN)/minio: $(BIN)/.minio-$(MINIO_VERSION)
$(BIN)/.minio-$(MINIO_VERSION):
	@echo "building MinIO $(MINIO_VERSION) into .bin/ (test service only)"
	GOBIN=$(BIN) $(GO) install -trimpath -gcflags='all=-N -l' -ldflags='-s -w' github.com/minio/minio@$(MINIO_VERSION)
	@touch $@

# venv DIR PACKAGES TOOLS: create the venv unless it is complete, then link
# each console script in TOOLS into .bin/.
define venv
@if [ ! -f $(1)/.complete ]; then \
  echo "installing $(2) into $(1)"; \
  rm -rf $(1); \
  $(PY) -m venv $(1) || { echo "$(PY) -m venv failed: on Debian/Ubuntu install python3-venv (apt-get install python3-venv)"; exit 1; }; \
  $(1)/bin/python -m pip install --quiet --disable-pip-version-check $(foreach p,$(2),'$(p)') || { rm -rf $(1); exit 1; }; \
  touch $(1)/.complete; \
fi
@for t in $(3); do ln -sfn $(notdir $(1))/bin/$$t $(BIN)/$$t; done
endef

## py-tools: moto_server (py-moto), cfn-lint and aws-sam-translator (pinned) in venvs under .bin/
py-tools: py-moto
	@mkdir -p $(BIN)
	$(call venv,$(PY_VENV),$(PY_PKGS),cfn-lint)

## py-moto: moto_server (pinned) alone in a venv under .bin/, what make local needs
py-moto:
	@mkdir -p $(BIN)
	$(call venv,$(MOTO_VENV),$(MOTO_PKGS),moto_server)

## sam-cli: the AWS SAM CLI (pinned) in a venv under .bin/, for `sam validate --lint` and `sam build` in the tests
sam-cli:
	@mkdir -p $(BIN)
	$(call venv,$(SAM_VENV),$(SAM_PKGS),sam)

## parquet-readers: pyarrow and DuckDB in a venv under .bin/pyenv-parquet, the two independent
## readers internal/parquet's tests read every written file back with (required in CI)
parquet-readers:
	bash scripts/parquet-readers.sh

## iceberg-tools: Apache Iceberg's REST catalog fixture (from Maven; needs java and mvn) and pyiceberg in .bin/,
## the catalog and the independent reader of the Iceberg tests (required in CI)
iceberg-tools:
	bash scripts/iceberg-tools.sh

## bench-parquet: internal/parquet against pyarrow on the same JSON Lines file (MB/s, sizes)
bench-parquet: parquet-readers
	bash scripts/bench-parquet.sh

AWS_PKGS := awscli==1.45.11
AWS_VENV := $(BIN)/awscli-$(call pins,$(AWS_PKGS))
## aws-cli: awscli (pinned) in a venv under .bin/, for `make sam-local` on a machine without `aws`
aws-cli:
	@mkdir -p $(BIN)
	$(call venv,$(AWS_VENV),$(AWS_PKGS),aws)

IGGY_PY_PKGS := apache-iggy==0.9.0
IGGY_PY_VENV := $(BIN)/pyiggy-$(call pins,$(IGGY_PY_PKGS))
## py-iggy: the released Python Iggy client (apache-iggy 0.9.0, protocol 0.11.0) in a venv under .bin/, the
## independent 0.9 client internal/iggy/iggytest's TestPythonClient drives the broker with
py-iggy:
	@mkdir -p $(BIN)
	$(call venv,$(IGGY_PY_VENV),$(IGGY_PY_PKGS),)

## fmt-check: fail when gofmt would change a file
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## vet: go vet every package, and the lean builds' (-tags noiceberg) and the stand-ins' (-tags standins)
vet:
	$(GO) vet ./...
	$(GO) vet -tags noiceberg ./cmd/... ./internal/app
	$(GO) vet -tags $(STANDINS_TAGS) ./cmd/poller

## bench: the benchmarks quoted in the README and issue notes
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...

## bootstrap: the Lambda binaries for provided.al2023 (GOARCH=arm64 by default for deployment): bootstrap, built
## without Iceberg, and bootstrap-iceberg, the full build it hands over to when tables are configured
# The lean bootstrap links no Iceberg library: it starts in about a tenth of
# the CPU time and memory (internal/handover).
bootstrap:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -tags lambda.norpc,noiceberg -trimpath -ldflags='$(LDFLAGS)' -o bootstrap ./cmd/lambda
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='$(LDFLAGS)' -o bootstrap-iceberg ./cmd/lambda

## build-SinkFunction: what `sam build` runs (ARTIFACTS_DIR=dir; ARCH=x86_64 for x86; CONFIG_FILE=path to bundle a configuration file)
# sam build (BuildMethod: makefile) calls this target with ARTIFACTS_DIR set.
# ARCH=x86_64 builds for x86 (deploy with Architecture=x86_64 too); CONFIG_FILE=path
# bundles that configuration file at the same relative path (deploy with SinkConfig=path).
# CONFIG_FILE is checked before the two cross-compiles, so that a typo fails in a second, not minutes later.
build-SinkFunction:
ifneq ($(strip $(CONFIG_FILE)),)
	@case "$(CONFIG_FILE)" in /*|*..*|*:*) echo "CONFIG_FILE=$(CONFIG_FILE): give a relative path inside the repository, e.g. CONFIG_FILE=examples/aws-hive-zstd.toml (it is bundled at the same path; deploy with SinkConfig=that path)"; exit 1;; esac
	@test -f "$(CONFIG_FILE)" || { echo "CONFIG_FILE=$(CONFIG_FILE): no such file in $(CURDIR): give the path of a configuration file relative to the repository, e.g. CONFIG_FILE=examples/aws-hive-zstd.toml (examples/ has more)"; exit 1; }
endif
	CGO_ENABLED=0 GOOS=linux GOARCH=$(if $(filter x86_64,$(ARCH)),amd64,$(or $(ARCH),arm64)) $(GO) build -tags lambda.norpc,noiceberg -trimpath -ldflags='$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./cmd/lambda
	CGO_ENABLED=0 GOOS=linux GOARCH=$(if $(filter x86_64,$(ARCH)),amd64,$(or $(ARCH),arm64)) $(GO) build -tags lambda.norpc -trimpath -ldflags='$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap-iceberg ./cmd/lambda
ifneq ($(strip $(CONFIG_FILE)),)
	mkdir -p "$(ARTIFACTS_DIR)/$(dir $(CONFIG_FILE))" && cp "$(CONFIG_FILE)" "$(ARTIFACTS_DIR)/$(CONFIG_FILE)"
endif

## clean: remove the built tools (.bin/), bootstrap, .aws-sam and .aws-sam-local (docs/local.md's build)
clean:
	rm -rf $(BIN) bootstrap bootstrap-iceberg .aws-sam .aws-sam-local
