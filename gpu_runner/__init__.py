"""The GPU runner: demo registry, executor (fork server), local and Celery backends.

Importing this package loads neither torch nor matplotlib: only the executor's child
processes do. The composition root (`bot.app.open_runner`) picks the backend
QUIZBOT_RUNNER names: `gpu_runner.local.LocalRunner` or `gpu_runner.celery_runner`.
"""
