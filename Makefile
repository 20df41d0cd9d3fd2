# podium's entry points. Each target sets up what it needs on a fresh machine:
#   make demo    venv + Docker engine + base images, then package, verify, publish, show
#   make test    venv + Docker engine + base images + lint + the test suite (what CI runs)
#   make lint    ruff check, ruff format --check, mypy
#   make docker  install/start the Docker engine and build the local base images (root)
#   make bench   the CPU benchmarks of podium itself (docs/benchmarks.md)
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.podium-installed
ARTIFACTS := test-artifacts

.PHONY: venv docker browser lint test demo bench

venv: $(STAMP)

# Re-installs only when pyproject.toml changed; torch is pinned on the line so pip takes
# the CPU build from the machine's wheel store rather than resolving a CUDA one.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev,engine,docker,data]' 'torch==2.13.0'
	touch $@

docker:
	bash scripts/setup-docker.sh

# Headless Chromium for the browser tests (Debian's package; no browser download).
browser:
	command -v chromium >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		chromium chromium-driver fonts-dejavu-core; }

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: venv docker browser lint
	mkdir -p $(ARTIFACTS)
	PODIUM_REQUIRE_DOCKER=1 PODIUM_REQUIRE_BROWSER=1 $(VENV)/bin/pytest -m "not gpu" -p no:cacheprovider \
		--junitxml=$(ARTIFACTS)/junit.xml

demo: venv docker
	bash scripts/demo.sh

# The CPU benchmarks (about 11 minutes; BENCH_ARGS=--quick for about 6): JSON results in
# bench/results/, plots in docs/img/bench-*.png, numbers in docs/benchmarks.md. The GPU part
# runs by hand on the GPU machine: python -m bench.gpu_e4b (see docs/benchmarks.md).
BENCH_STAMP := $(VENV)/.podium-bench-installed

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]' 'torch==2.13.0'
	touch $@

bench: $(BENCH_STAMP) browser
	$(PY) -m bench $(BENCH_ARGS)
