"""Every test in this directory is bounded, and the bound stops a test that hangs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.discord.conftest import HERE, TIMEOUT

ROOT = Path(__file__).parents[3]


def declared(obj: object) -> tuple[object, ...] | None:
    """The timeout a test function or module sets for itself, if any."""
    marks = getattr(obj, "pytestmark", [])
    marks = marks if isinstance(marks, list) else [marks]
    return next((m.args for m in marks if m.name == "timeout"), None)


def test_every_test_here_gets_the_directorys_timeout_unless_it_sets_its_own(
    request: pytest.FixtureRequest,
) -> None:
    here = [i for i in request.session.items if i.path.is_relative_to(HERE)]
    assert request.node in here
    for item in here:
        assert isinstance(item, pytest.Function)
        marker = item.get_closest_marker("timeout")
        assert marker is not None, item.nodeid
        expected = declared(item.obj) or declared(item.module) or (TIMEOUT,)
        assert marker.args == expected, item.nodeid


def test_a_timeout_marker_stops_an_async_test_that_hangs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_hangs="""
        import asyncio

        import pytest


        @pytest.mark.timeout(1)
        async def test_waits_forever() -> None:
            await asyncio.Event().wait()
        """
    )
    # The project's own pytest settings (asyncio mode, pytest-timeout's method).
    config = str(ROOT / "pyproject.toml")
    result = pytester.runpytest_subprocess(
        "-c", config, "-p", "no:cacheprovider", str(pytester.path / "test_hangs.py"), timeout=30
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Timeout (>1.0s) from pytest-timeout*"])
    assert result.duration < 20
