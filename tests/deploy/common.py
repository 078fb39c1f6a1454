"""What the deployment tests share: the files, the settings' variable names, and how an
image, compose or Kubernetes turns a container's entry point and arguments into argv."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bot.config import Settings, env_name

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "compose.yaml"
OPERATIONS = ROOT / "docs" / "operations.md"
DOCKERFILES = {
    "quizbot": DEPLOY / "docker" / "bot.Dockerfile",
    "quizbot-gpu-runner": DEPLOY / "docker" / "gpu-runner.Dockerfile",
}

SETTINGS_VARS = frozenset(env_name(f) for f in Settings.model_fields)

# Variables that are not quizbot settings but are used on purpose, and why.
ALLOWED_VARS = {
    "POSTGRES_USER": "read by the postgres image in compose",
    "POSTGRES_PASSWORD": "read by the postgres image in compose",
    "POSTGRES_DB": "read by the postgres image in compose",
    "PYTORCH_CUDA_ALLOC_CONF": "set by the runner for each demo process",
    "CUDA_VISIBLE_DEVICES": "set by the runner for each demo process",
    "PYTHONDONTWRITEBYTECODE": "CPython's own, set in the images",
    "PYTHONUNBUFFERED": "CPython's own, set in the images",
}
ALLOWED_PREFIXES = {"QUIZBOT_TEST_": "the test suite's own (tests/conftest.py)"}


def unknown_vars(names: set[str]) -> list[str]:
    """Names that are neither a `Settings` variable nor allow-listed above."""
    return sorted(
        n
        for n in names
        if n not in SETTINGS_VARS
        and n not in ALLOWED_VARS
        and not any(n.startswith(p) for p in ALLOWED_PREFIXES)
    )


# -- YAML -----------------------------------------------------------------------------


def yaml_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml"))


def load_all(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return doc


def k8s_objects() -> list[tuple[Path, dict[str, Any]]]:
    """Every Kubernetes object under deploy/k8s (the base and extras/), kustomization aside."""
    out = []
    for path in sorted(K8S.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        out += [(path, d) for d in load_all(path)]
    return out


def pod_specs(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if obj.get("kind") in ("Deployment", "StatefulSet", "Job", "DaemonSet"):
        yield obj["spec"]["template"]["spec"]
    elif obj.get("kind") == "CronJob":
        yield obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def containers(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for spec in pod_specs(obj):
        yield from spec.get("initContainers", [])
        yield from spec.get("containers", [])


# -- Dockerfiles ----------------------------------------------------------------------


@dataclass
class Dockerfile:
    path: Path
    instructions: list[tuple[str, str]] = field(default_factory=list)  # final stage only
    stages: int = 0

    def last(self, name: str) -> str | None:
        found = [arg for ins, arg in self.instructions if ins == name]
        return found[-1] if found else None

    def exec_form(self, name: str) -> list[str]:
        arg = self.last(name)
        if arg is None:
            return []
        return exec_form(arg, f"{self.path.name} {name}")

    @property
    def entrypoint(self) -> list[str]:
        return self.exec_form("ENTRYPOINT")

    @property
    def cmd(self) -> list[str]:
        return self.exec_form("CMD")

    @property
    def healthcheck(self) -> list[str]:
        arg = self.last("HEALTHCHECK")
        if arg is None:
            return []
        _, _, command = arg.partition("CMD ")
        return exec_form(command.strip(), f"{self.path.name} HEALTHCHECK")

    @property
    def env_names(self) -> set[str]:
        names = set()
        for ins, arg in self.instructions:
            if ins == "ENV":
                names |= set(re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=", arg))
        return names


def exec_form(arg: str, where: str) -> list[str]:
    try:
        value = json.loads(arg)
    except ValueError:
        raise AssertionError(f"{where}: use the exec (JSON) form, not {arg!r}") from None
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), where
    return value


def dockerfile(path: Path) -> Dockerfile:
    """Instructions of the final stage, continuation lines joined, comments dropped."""
    logical: list[str] = []
    buf = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        logical.append(buf + line)
        buf = ""
    out = Dockerfile(path)
    for line in logical:
        ins, _, arg = line.partition(" ")
        ins = ins.upper()
        if ins == "FROM":
            out.stages += 1
            out.instructions = []
        out.instructions.append((ins, arg.strip()))
    return out


def image_repo(image: str) -> str:
    """``registry.example/team/quizbot:1.0`` -> ``quizbot``."""
    name = image.rsplit("/", 1)[-1]
    return name.split("@", 1)[0].split(":", 1)[0]


# -- commands -------------------------------------------------------------------------


def quizbot_args(argv: list[str]) -> list[str] | None:
    """The arguments after ``quizbot`` when argv runs the quizbot CLI, else None."""
    if argv and (argv[0] == "quizbot" or argv[0].endswith("/quizbot")):
        return argv[1:]
    return None


def healthcheck_argv(test: Any) -> list[str]:
    """A compose health check's ``test`` as argv."""
    if isinstance(test, str):
        return shlex.split(test)
    if test and test[0] == "CMD":
        return list(test[1:])
    if test and test[0] == "CMD-SHELL":
        return shlex.split(test[1])
    return []


def compose_commands() -> list[tuple[str, list[str]]]:
    """(where, argv) for every command compose runs: containers and health checks."""
    found = []
    for name, svc in compose()["services"].items():
        repo = image_repo(svc.get("image", ""))
        if repo in DOCKERFILES:
            image = dockerfile(DOCKERFILES[repo])
            # Compose: an `entrypoint` override also drops the image's CMD.
            entry = svc.get("entrypoint", image.entrypoint)
            default = [] if "entrypoint" in svc else image.cmd
            found.append((f"compose {name}", list(entry) + list(svc.get("command", default))))
        if "healthcheck" in svc:
            found.append(
                (f"compose {name} healthcheck", healthcheck_argv(svc["healthcheck"]["test"]))
            )
    return found


def k8s_commands() -> list[tuple[str, list[str]]]:
    """(where, argv) for every container and exec probe of the manifests."""
    found = []
    for path, obj in k8s_objects():
        for c in containers(obj):
            where = f"{path.relative_to(K8S)} {obj['kind']}/{obj['metadata']['name']} {c['name']}"
            repo = image_repo(c["image"])
            if repo in DOCKERFILES:
                image = dockerfile(DOCKERFILES[repo])
                # Kubernetes: `command` replaces ENTRYPOINT (and drops CMD); `args` replaces CMD.
                entry = c.get("command", image.entrypoint)
                default = [] if "command" in c else image.cmd
                found.append((where, list(entry) + list(c.get("args", default))))
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                if "exec" in c.get(probe, {}):
                    found.append((f"{where} {probe}", list(c[probe]["exec"]["command"])))
    return found


def image_commands() -> list[tuple[str, list[str]]]:
    found = []
    for repo, path in DOCKERFILES.items():
        image = dockerfile(path)
        found.append((f"{repo} image", image.entrypoint + image.cmd))
        if image.healthcheck:
            found.append((f"{repo} image HEALTHCHECK", image.healthcheck))
    return found
