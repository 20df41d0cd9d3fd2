# podium's entry points. Each target sets up what it needs on a fresh machine:
#   make demo    venv + Docker engine + the two images it runs on (not the vLLM one), then
#                package, verify, publish, show; one line per set-up step, logs in out/demo
#   make test    venv + Docker engine + base images + lint + the test suite (what CI runs)
#   make lint    ruff check, ruff format --check, mypy
#   make lowest  the core dependencies at their lowest allowed versions, and the core tests
#   make docker  install/start the Docker engine and build every local image, podium/vllm-cpu
#                included (the tiny-vllm examples and the test suite need it; root)
#   make bench   the benchmarks of podium itself, python -m bench (docs/benchmarks.md)
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.podium-installed
ARTIFACTS := test-artifacts

.PHONY: venv demo-venv docker browser lint lowest test demo bench gpu-wheels

venv: $(STAMP)

# Re-installs only when pyproject.toml changed; torch is pinned on the line so the CPU
# build comes from the machine's wheel store rather than a CUDA one being resolved.
# scripts/venv.sh installs with uv under the machine's pip settings, else with pip.
$(STAMP): pyproject.toml
	bash scripts/venv.sh $(VENV) -e '.[dev,engine,docker,data,sweep,postgres]' 'torch==2.13.0'
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

# The lower bounds in pyproject.toml are true only if the code works with them: uv's
# lowest-direct resolution installs exactly the lowest allowed version of every core
# dependency (and of the docker extra, which packaging needs; their own dependencies
# resolve as usual) into a venv of its own, rebuilt
# when pyproject.toml changes, and the tests of the core that need nothing else run there.
LOWEST := $(VENV)/lowest
LOWEST_STAMP := $(LOWEST)/.podium-installed
LOWEST_TESTS := tests/schemas tests/podium/test_hub.py tests/leaderboard/test_hub_store.py \
	tests/leaderboard/test_local_store.py tests/leaderboard/test_records.py \
	tests/leaderboard/test_cli_views.py tests/verifier/scale/test_queue_stores.py \
	tests/verifier/scale/test_claim_loop.py tests/verifier/scale/test_dispatch_hf.py \
	tests/verifier/scale/test_queue_cli.py tests/verifier/test_harness_wire.py \
	tests/verifier/test_harness_client.py tests/submission/test_validate.py \
	tests/submission/test_push.py \
	--deselect tests/leaderboard/test_cli_views.py::test_export_writes_csv_parquet_and_json

$(LOWEST_STAMP): pyproject.toml $(STAMP)
	rm -rf $(LOWEST)
	$(VENV)/bin/uv venv --quiet --python $(PY) $(LOWEST)
	$(VENV)/bin/uv pip install --quiet --python $(LOWEST)/bin/python \
		--resolution lowest-direct -e '.[docker]'
	$(VENV)/bin/uv pip install --quiet --python $(LOWEST)/bin/python 'pytest>=8'
	touch $@

lowest: $(LOWEST_STAMP)
	$(VENV)/bin/uv pip freeze --python $(LOWEST)/bin/python | \
		grep -iE '^(jsonschema|typer|click|rich|huggingface.hub|httpx2|h11|cryptography|docker)=' | tr '\n' ' '
	@echo
	$(LOWEST)/bin/python -m pytest -q -p no:cacheprovider -m "not docker and not slow and not browser and not gpu" \
		$(LOWEST_TESTS)

# scripts/test.sh: the Debian packages and the Docker engine, then the venv with the images
# built beside it, then the suite file by file on TEST_WORKERS processes (pytest-xdist; a
# file stays on one worker, so its module-scoped verifications are shared) with lint and the
# lowest dependencies' tests beside it, then the tests marked `serial`, which measure the
# machine's own timing and run with nothing beside them. Each step's time goes to
# test-artifacts/steps.jsonl; each pytest pass fails on a failure and on "no tests ran".
TEST_WORKERS ?= 2

test:
	MAKE="$(MAKE)" TEST_WORKERS=$(TEST_WORKERS) ARTIFACTS=$(ARTIFACTS) bash scripts/test.sh

# scripts/demo.sh sets up what it runs itself (make demo-venv, the engine base image), one
# line per step, so that the package managers' output stays in its log.
demo:
	MAKE="$(MAKE)" bash scripts/demo.sh

# What the demo runs and no more: the core with the engine and docker extras (make venv
# adds the test tools and the data and sweep extras); nothing to do once make venv ran.
DEMO_STAMP := $(VENV)/.podium-demo-installed

demo-venv: $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml
	test $(STAMP) -nt pyproject.toml || bash scripts/venv.sh $(VENV) -e '.[engine,docker]' 'torch==2.13.0'
	touch $@

# The benchmarks, every part of python -m bench (BENCH_ARGS=--quick for a shorter run,
# BENCH_ARGS="--only fidelity,noise" for some; --list names them): JSON results in
# bench/results/, plots in docs/img/bench-*.png; python -m bench.docs --write then renders the
# numbers into docs/benchmarks.md and docs/measurement.md (--check, run by the tests). Parts that
# need Docker or a CUDA GPU are skipped where it is missing; the GPU runs are tests on the
# GPU machine: bash bench/gpu.sh. The calibration of the checks: python -m calibration.calibrate.
BENCH_STAMP := $(VENV)/.podium-bench-installed

$(BENCH_STAMP): $(STAMP)
	bash scripts/venv.sh $(VENV) -e '.[bench]' 'torch==2.13.0'
	touch $@

bench: $(BENCH_STAMP) browser
	$(PY) -m bench $(BENCH_ARGS)

# The wheels a GPU machine with torch and CUDA but without podium's own dependencies lacks
# for `bash bench/gpu.sh` (Python 3.12, x86-64), fetched here from PyPI with no
# dependencies of their own resolved (the list is whole): carry .whl/ there (about 30 MB).
GPU_WHEELS := .whl/gpu-py312
GPU_WHEEL_LIST := jsonschema referencing rpds-py jsonschema-specifications attrs cryptography \
	cffi pycparser 'huggingface_hub==2.4.*' hf-xet httpx2 httpcore2 truststore idna certifi \
	anyio sniffio h11 click 'typer==0.29.*' shellingham rich markdown-it-py mdurl pygments \
	pydantic pydantic-core annotated-types typing-inspection typing-extensions docker \
	prometheus-client 'transformers==5.24.0' pytest pluggy iniconfig packaging

gpu-wheels: venv
	rm -rf $(GPU_WHEELS)
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --implementation cp \
		--python-version 3.12 --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 \
		--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
		-d $(GPU_WHEELS) $(GPU_WHEEL_LIST)
	# the jail runner's bubblewrap, for a GPU host that lacks it (bench/gpu.sh unpacks it)
	rm -rf .whl/deb && mkdir -p .whl/deb && cd .whl/deb && apt-get download bubblewrap
