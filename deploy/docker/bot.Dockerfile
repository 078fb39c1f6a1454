# The bot: Slack and/or Discord, scheduler, /healthz and /metrics. No torch here: demos run
# in the GPU runner (QUIZBOT_RUNNER=celery) or on the simulator.
# Build from the repository root:  docker build -f deploy/docker/bot.Dockerfile -t quizbot .

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY adapters ./adapters
COPY questions ./questions
COPY storage ./storage
COPY gpu_runner ./gpu_runner
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[postgres,celery]"

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    QUIZBOT_HTTP_PORT=8080
COPY --from=build /wheels /wheels
# The only index is /wheels, built from this tree in the first stage: versions are fixed there.
# hadolint ignore=DL3013
RUN pip install --no-cache-dir --no-index --find-links=/wheels "quizbot[postgres,celery]" \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 quizbot \
    && install -d -o quizbot -g quizbot /data
# /data: where a SQLite database goes (QUIZBOT_DATABASE_URL=sqlite:////data/quizbot.db)
# when mounted as a volume; PostgreSQL deployments do not use it.
USER 10001
WORKDIR /home/quizbot
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('QUIZBOT_HTTP_PORT', '8080'), timeout=4)"]
ENTRYPOINT ["quizbot"]
CMD ["serve"]
