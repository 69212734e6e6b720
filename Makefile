# Meridian's front door. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO       ?= go
TOOLS    := $(GO) tool -modfile=tools/go.mod
BIN      := bin/meridian
BUILD    := $(shell git rev-parse --short HEAD 2>/dev/null || echo dev)
LDFLAGS  := -X meridian/internal/config.Build=$(BUILD)
DOCS_JS  := internal/apidocs/assets/redoc.standalone.js
export REDOCLY_TELEMETRY := off
export REDOCLY_SUPPRESS_UPDATE_NOTICE := true

.PHONY: help deps tools generate check-generated build run stop db-test lint lint-go lint-arch lint-openapi \
        ts-check ops-coverage shapes-check ops-status test test-unit test-conformance test-s3 test-scale bench clean

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

deps: ## install missing Debian packages (root + apt) or print the command to run
	@scripts/devdb.sh deps

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

generate: node_modules/.installed ## regenerate gen/ (oapi-codegen), store/ (sqlc) and the docs assets
	$(TOOLS) oapi-codegen -config oapi-codegen.yaml -o gen/api.gen.go openapi/openapi.yaml
	$(TOOLS) sqlc generate
	cp node_modules/redoc/bundles/redoc.standalone.js $(DOCS_JS)

check-generated: node_modules/.installed ## fail when generated files differ from what make generate writes
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(TOOLS) oapi-codegen -config oapi-codegen.yaml -o $$tmp/api.gen.go openapi/openapi.yaml && \
	cmp -s $$tmp/api.gen.go gen/api.gen.go || { echo "gen/api.gen.go is stale: run make generate"; exit 1; }; \
	$(TOOLS) sqlc diff || { echo "store/ is stale: run make generate"; exit 1; }; \
	cmp -s node_modules/redoc/bundles/redoc.standalone.js $(DOCS_JS) || { echo "$(DOCS_JS) is stale: run make generate"; exit 1; }; \
	echo "generated code is fresh"

build: ## build bin/meridian
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/meridian

run: deps build ## install what is missing, start a local PostGIS, migrate, create the admin and serve on :8080
	@scripts/run.sh

stop: ## stop the PostgreSQL clusters make run and make test started
	@scripts/devdb.sh stop

lint-go: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/' ) 2>/dev/null); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags scale ./conformance/

lint-openapi: node_modules/.installed ## lint the contract with Redocly and check it against the operation list
	npx --no-install redocly lint openapi/openapi.yaml --config openapi/redocly.yaml --format=stylish
	$(MAKE) --no-print-directory ops-coverage shapes-check

shapes-check: ## compare the contract with the shapes clients send and parse (../shared/spec/reference-shapes.json)
	@if [ -x ../shared/tools/shapes ]; then ../shared/tools/shapes check openapi/openapi.yaml; \
	else echo "shapes-check: ../shared/tools not present, skipped"; fi

ops-coverage: ## compare the contract with ../shared/spec/operations.tsv
	@if [ -x ../shared/tools/ops-coverage ]; then ../shared/tools/ops-coverage openapi/openapi.yaml; \
	else echo "ops-coverage: ../shared/tools not present, skipped"; fi

ts-check: node_modules/.installed ## generate a TypeScript client with openapi-typescript and type-check it
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	npx --no-install openapi-typescript openapi/openapi.yaml -o $$tmp/api.d.ts >/dev/null && \
	cp openapi/ts-check/usage.ts $$tmp/ && \
	npx --no-install tsc --strict --noEmit --skipLibCheck false --target es2022 --moduleResolution node $$tmp/api.d.ts $$tmp/usage.ts && \
	echo "TypeScript client type-checks"

lint-arch: ## golangci-lint: who may import whom, handler rules (no http.Error/c.JSON/c.String, 40 lines), errcheck
	$(GO) tool -modfile=tools/lint/go.mod golangci-lint run ./...

lint: lint-go lint-arch lint-openapi ts-check ## every static check

db-test: deps ## start the throwaway test cluster (.data/pgtest) and print its URL
	@DEVDB_FAST=1 scripts/devdb.sh start pgtest

test: deps node_modules/.installed ## everything CI runs: lints, generated-code freshness, unit, store and conformance tests
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory check-generated
	$(MAKE) --no-print-directory build
	TEST_DATABASE_URL=$$(DEVDB_FAST=1 scripts/devdb.sh start pgtest) \
	  $(GO) test -count=1 -race -shuffle=on -timeout 30m ./...

test-unit: ## unit tests only (no database)
	$(GO) test -count=1 -short ./...

test-conformance: build ## the black-box conformance suite alone
	TEST_DATABASE_URL=$$(DEVDB_FAST=1 scripts/devdb.sh start pgtest) \
	  $(GO) test -count=1 -v -run . ./conformance/...

MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_BIN     := .data/tools/minio

$(MINIO_BIN):
	@echo "building MinIO $(MINIO_VERSION) once (about 15 minutes; cached in $(MINIO_BIN))"
	@mkdir -p $(dir $(MINIO_BIN))
	cd /tmp && GOFLAGS=-mod=mod GOBIN=$(abspath $(dir $(MINIO_BIN))) $(GO) install github.com/minio/minio@$(MINIO_VERSION)

test-s3: deps $(MINIO_BIN) ## opt-in: presigned uploads end to end against a real MinIO (built once and cached)
	TEST_DATABASE_URL=$$(DEVDB_FAST=1 scripts/devdb.sh start pgtest) MINIO_BIN=$(abspath $(MINIO_BIN)) \
	  $(GO) test -count=1 -tags s3 -run 'TestPresignedUploadToMinIO' -v ./conformance/

SCALE_ENDURANCE ?= 5m

test-scale: deps build $(MINIO_BIN) ## opt-in: two replicas behind HAProxy over one MinIO: cross-replica rules, rolling restart, endurance (SCALE_ENDURANCE=60m for the hour)
	@command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || { \
	  if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then \
	    echo "test-scale: installing haproxy"; apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy >/dev/null; \
	  else echo "test-scale needs haproxy: sudo apt-get install -y --no-install-recommends haproxy"; exit 1; fi; }
	TEST_DATABASE_URL=$$(DEVDB_FAST=1 scripts/devdb.sh start pgtest) SCALE_ENDURANCE=$(SCALE_ENDURANCE) MINIO_BIN=$(abspath $(MINIO_BIN)) \
	  $(GO) test -count=1 -tags scale -run '^TestScale$$' -timeout 3h -v ./conformance/ 2>&1 | grep --line-buffered -v '^conformance: exercised: '; exit $${PIPESTATUS[0]}

ops-status: ## how many operations are implemented (the rest answer 501 naming their operationId)
	@$(GO) test -count=1 -run TestOperationStatus -v ./handlers/ | grep '^ops-status'

bench: build ## benchmarks (figures go in closing notes: medians and ratios)
	TEST_DATABASE_URL=$$(DEVDB_FAST=1 scripts/devdb.sh start pgtest) \
	  $(GO) test -run '^$$' -bench . -benchmem -count 5 ./...

.PHONY: test-backup
test-backup: deps ## back up a catalog with meridian backup, restore it into a new database and DATA_DIR, compare (TestBackupAndRestore)
	TEST_DATABASE_URL=$$(DEVDB_FAST=1 scripts/devdb.sh start pgtest) \
	  $(GO) test -count=1 -run '^TestBackupAndRestore$$' -v ./conformance/ 2>&1 | grep --line-buffered -v '^conformance: exercised: '; exit $${PIPESTATUS[0]}

clean: stop ## remove build output and local clusters
	rm -rf bin .data
