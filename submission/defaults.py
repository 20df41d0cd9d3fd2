"""Names and defaults of a submission directory, kept in one place.

Everything here is a convention between ``init``, ``validate``, ``freeze``, the
bundle writer and the verifier; changing a value changes the bundle format.
"""

from __future__ import annotations

#: The local engine base image that scripts/build-images.sh produces (its moving alias).
ENGINE_BASE_IMAGE = "podium/engine-base:bookworm"
#: The vLLM OpenAI-compatible server image the vllm engine kind starts from on a GPU (the
#: reference engine's vLLM release); freeze pins it to a digest, and the verifier rebuilds
#: from that digest.
VLLM_BASE_IMAGE = "vllm/vllm-openai:v0.32.0"
#: The same vLLM release built for x86 CPUs by scripts/build-images.sh, for CPU challenges.
VLLM_CPU_BASE_IMAGE = "podium/vllm-cpu:0.32.0"

CONFIG_FILE = "podium.toml"
MANIFEST_FILE = "manifest.json"
DOCKERFILE = "Dockerfile"
#: The frozen engine config, written by freeze from ``[engine.config]``.
ENGINE_CONFIG_FILE = "engine-config.json"
REQUIREMENTS_FILE = "requirements.txt"
#: Where the original manifest of an imported Fast Gemma submission is kept verbatim.
ORIGIN_MANIFEST_FILE = "origin-manifest.json"

#: Files freeze writes itself: never bundled as participant files (manifest.json) or
#: never used for the ``created`` time (both).
GENERATED_FILES = frozenset({MANIFEST_FILE, ENGINE_CONFIG_FILE})

#: Directory names skipped anywhere in the tree, and file name suffixes skipped.
IGNORED_DIRS = frozenset({".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo")
IGNORED_NAMES = frozenset({".DS_Store"})

#: Where the submission lives inside the image; the verifier mounts the model at /model.
CONTAINER_ROOT = "/submission"
MODEL_MOUNT = "/model"

#: The manifest is read into memory; it may not be larger than this.
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
