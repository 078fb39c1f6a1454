"""quizbot's platform-neutral core: domain values, ports, use cases, i18n, config, CLI."""

__version__ = "0.1.0"
