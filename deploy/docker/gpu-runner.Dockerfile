# The GPU runner: a Celery worker that runs registered demos on the host's GPU, one at a
# time per GPU. The base image brings CUDA and PyTorch; quizbot adds its `celery` extra
# (no second torch: the `gpu` extra's torch requirement is the base image's).
# Build from the repository root:
#   docker build -f deploy/docker/gpu-runner.Dockerfile -t quizbot-gpu-runner .
#
# The base is the PyTorch whose allocator rules the demos and the simulator describe
# (gpu_runner.sim.RULES_TORCH = "2.13"; tests/deploy checks the two agree): torch 2.13.0 on
# CUDA 13.0, the official image's <torch>-cuda<major.minor>-cudnn9-runtime tag. CUDA 13.0 is
# the stable CUDA of the 2.12 and 2.13 wheels (CUDA 12.8 builds stopped after 2.11); it needs
# an NVIDIA driver >= 580 on the host. The tag was chosen from that naming scheme without
# pulling it here: if a registry mirror lacks it, use the 2.13.x tag it has and keep
# RULES_TORCH's minor version.

FROM pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY adapters ./adapters
COPY questions ./questions
COPY storage ./storage
COPY gpu_runner ./gpu_runner
# Wheels for quizbot and its dependencies, torch excluded (not a base dependency).
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[celery]"

FROM pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /wheels /wheels
# The only index is /wheels, built from this tree in the first stage. Packages the base
# image already has (numpy, pillow, ...) are kept: pip installs only what is missing.
# hadolint ignore=DL3013
RUN pip install --no-cache-dir --no-index --find-links=/wheels "quizbot[celery]" \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 runner
USER 10001
WORKDIR /home/runner
# The worker preloads torch before it answers pings: give it time to start.
HEALTHCHECK --interval=60s --timeout=20s --start-period=120s --retries=3 \
    CMD ["quizbot", "runner", "ping"]
ENTRYPOINT ["quizbot", "runner", "worker"]
