# podium's reference engine: vLLM's OpenAI-compatible server behind the podium launcher.
#
# The base must be pinned by tag AND digest: the verifier refuses an unpinned base.
# The default below names vLLM v0.24.0 with a digest quoted from a public third-party pin
# of that tag; it has NOT been checked against the registry. Before relying on it, confirm
# it with
#   docker buildx imagetools inspect vllm/vllm-openai:v0.24.0
# and replace the digest with the index digest printed there (docs/vllm-engine.md).
ARG BASE_IMAGE=vllm/vllm-openai:v0.24.0@sha256:251eba5cc7c12fed0b75da22a9240e582b1c9e39f6fbc064f86781b963bd814f

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
# No bytecode is written, so the container runs with a read-only root.
ENV PYTHONPATH=/opt/podium \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    VLLM_NO_USAGE_STATS=1 \
    DO_NOT_TRACK=1

WORKDIR /submission
EXPOSE 8000
ENTRYPOINT ["python3", "-m", "engines.vllm_launcher", "/submission/engine-config.json"]
