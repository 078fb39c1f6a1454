# The GPU runner: a Celery worker that runs registered demos on the host's GPU, one at a
# time per GPU. The base image brings CUDA and PyTorch; quizbot adds the runner extra.
# Build from the repository root:
#   docker build -f deploy/docker/gpu-runner.Dockerfile -t quizbot-gpu-runner .

FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY adapters ./adapters
COPY questions ./questions
COPY storage ./storage
COPY gpu_runner ./gpu_runner
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
    && pip wheel --no-cache-dir --wheel-dir /wheels "celery[redis]>=5.4" "redis>=5.0"

FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /wheels /wheels
# torch comes from the base image: install quizbot's other dependencies, not a second torch.
RUN pip install --no-cache-dir --find-links=/wheels /wheels/quizbot-*.whl "celery[redis]>=5.4" \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 runner
USER 10001
WORKDIR /home/runner
ENTRYPOINT ["quizbot", "runner", "worker"]
