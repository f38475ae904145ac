# iggy-s3-sink — one entry point for building, testing and the demo.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/.bin
GOARCH ?= $(shell $(GO) env GOARCH)
PY_TOOLS := moto_server cfn-lint
export PATH := $(BIN):$(PATH)
# The SAM CLI reports usage to AWS unless told not to.
export SAM_CLI_TELEMETRY := 0

.PHONY: all demo test tools py-tools sam-cli sam-local fmt-check vet unit bench bootstrap build-SinkFunction clean

all: test

## demo: drain sample traffic from an in-process Iggy broker into an in-process S3 (no setup, no network)
demo:
	$(GO) run ./cmd/poller demo

## test: install tools, check formatting and vet, run every test with -race (servers start and stop inside the
## tests), then the `sam local` workflow (sam-local)
test: tools py-tools sam-cli fmt-check vet
	$(GO) test -race -count=1 -timeout 20m ./...
	@./scripts/sam-local.sh

## sam-local: `sam local invoke` and `sam local start-lambda` against MinIO, moto_server and an Iggy broker in
## Docker (installed and started when missing, as root); skips locally without root or engine, fails in CI
sam-local: tools py-tools sam-cli
	@./scripts/sam-local.sh

## tools: build the pinned Go tool dependencies (versitygw, aws-lambda-rie, minio) into .bin/, side by side
## (one build's module downloads and link overlap another's compiling)
tools:
	@$(MAKE) --no-print-directory -j3 $(BIN)/versitygw $(BIN)/aws-lambda-rie $(BIN)/minio

$(BIN)/versitygw: go.mod
	$(GO) build -o $@ github.com/versity/versitygw/cmd/versitygw

$(BIN)/aws-lambda-rie: go.mod
	$(GO) build -o $@ github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie

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

## py-tools: moto_server and cfn-lint from the machine, else from PyPI
py-tools:
	@for t in $(PY_TOOLS); do command -v $$t >/dev/null || { \
	  echo "installing Python test tools"; \
	  python3 -m pip install --quiet "moto[server]==5.2.1" "cfn-lint==1.51.0" "aws-sam-translator==1.110.0"; \
	  if command -v pyenv >/dev/null; then pyenv rehash; fi; break; }; done

## sam-cli: AWS SAM CLI in a venv under .bin/ when the machine has none, for
## `sam validate --lint` and `sam build` in the tests; best effort (the tests skip without it)
sam-cli:
	@command -v sam >/dev/null || [ -x $(BIN)/sam ] || { \
	  echo "installing AWS SAM CLI into .bin/samcli"; \
	  python3 -m venv $(BIN)/samcli && $(BIN)/samcli/bin/pip install --quiet aws-sam-cli && \
	  ln -sf $(BIN)/samcli/bin/sam $(BIN)/sam || echo "AWS SAM CLI not installed; its template checks will be skipped"; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## bench: the benchmarks quoted in the README and issue notes
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...

## bootstrap: the Lambda binary for provided.al2023 (GOARCH=arm64 by default for deployment)
bootstrap:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o bootstrap ./cmd/lambda

# sam build (BuildMethod: makefile) calls this target with ARTIFACTS_DIR set.
build-SinkFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(if $(filter x86_64,$(ARCH)),amd64,$(or $(ARCH),arm64)) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap ./cmd/lambda

clean:
	rm -rf $(BIN) bootstrap .aws-sam
