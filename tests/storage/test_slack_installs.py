"""Slack's installation and OAuth state stores on the database (slack_sdk's interfaces):
any replica finds an install, a state is taken once before it expires, one replica
refreshes a rotating token."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from slack_sdk.oauth.installation_store import Installation

from bot.clock import FakeClock
from storage.store import SqlStore


def install(team: str | None = "T1", **kw: object) -> Installation:
    fields: dict[str, object] = {
        "app_id": "A1",
        "team_id": team,
        "team_name": f"Team {team}",
        "bot_token": f"xoxb-{team}-1",
        "bot_id": "B1",
        "bot_user_id": "UBOT",
        "bot_scopes": "chat:write,commands",
        "user_id": "UINSTALLER",
        **kw,
    }
    return Installation(**fields)  # type: ignore[arg-type]


async def test_an_install_saved_on_one_replica_is_found_on_another(
    store: SqlStore, db_url: str, clock: FakeClock
) -> None:
    await store.slack_installs.async_save(install("T1"))
    await store.slack_installs.async_save(install("T2"))
    async with SqlStore(db_url, clock=clock) as other:
        bot = await other.slack_installs.async_find_bot(enterprise_id=None, team_id="T2")
        assert bot is not None and bot.bot_token == "xoxb-T2-1"
        found = await other.slack_installs.async_find_installation(enterprise_id=None, team_id="T1")
        assert found is not None and found.user_id == "UINSTALLER"
        assert found.bot_scopes == ["chat:write", "commands"]
    assert await store.slack_installs.async_find_bot(enterprise_id=None, team_id="T3") is None


async def test_a_reinstall_replaces_the_token_and_an_uninstall_erases_it(
    store: SqlStore,
) -> None:
    installs = store.slack_installs
    await installs.async_save(install("T1"))
    await installs.async_save(install("T1", bot_token="xoxb-T1-2"))
    token = await installs.bot_token("T1")
    assert token is not None and token.token == "xoxb-T1-2"
    await installs.async_delete_all(enterprise_id=None, team_id="T1")
    assert await installs.bot_token("T1") is None
    assert await installs.async_find_installation(enterprise_id=None, team_id="T1") is None
    assert await installs.uninstalled("T1")
    assert not await installs.uninstalled("T9")  # never installed
    assert await installs.installed_teams() == set()
    await installs.async_save(install("T1", bot_token="xoxb-T1-3"))
    assert not await installs.uninstalled("T1")
    assert await installs.installed_teams() == {"T1"}
    assert await installs.forget("T1") == 1
    assert not await installs.uninstalled("T1")


async def test_an_organisation_wide_install_serves_its_workspaces(store: SqlStore) -> None:
    installs = store.slack_installs
    await installs.async_save(
        install(None, enterprise_id="E1", is_enterprise_install=True, bot_token="xoxb-E1")
    )
    bot = await installs.async_find_bot(
        enterprise_id="E1", team_id="T7", is_enterprise_install=False
    )
    assert bot is not None and bot.bot_token == "xoxb-E1" and bot.is_enterprise_install
    org = await installs.async_find_installation(
        enterprise_id="E1", team_id=None, is_enterprise_install=True
    )
    assert org is not None and org.enterprise_id == "E1"
    # A scheduled post knows only the team: the organisation is learned from a request.
    assert await installs.bot_token("T7") is None
    await installs.remember_team("T7", "E1")
    token = await installs.bot_token("T7")
    assert token is not None and token.token == "xoxb-E1"
    assert await installs.installed_teams() == {"T7"}
    # A workspace of the organisation with its own install uses its own token.
    await installs.async_save(install("T8", enterprise_id="E1", bot_token="xoxb-T8"))
    own = await installs.bot_token("T8", "E1")
    assert own is not None and own.token == "xoxb-T8"


async def test_a_state_is_taken_once_on_any_replica(
    store: SqlStore, db_url: str, clock: FakeClock
) -> None:
    state = await store.slack_states.async_issue()
    async with SqlStore(db_url, clock=clock) as other:
        results = await asyncio.gather(
            store.slack_states.async_consume(state), other.slack_states.async_consume(state)
        )
    assert sorted(results) == [False, True]
    assert not await store.slack_states.async_consume(state)  # reused
    assert not await store.slack_states.async_consume("forged-" + state)


async def test_an_expired_state_is_refused(store: SqlStore, clock: FakeClock) -> None:
    state = await store.slack_states.async_issue()
    fresh = await store.slack_states.async_issue()
    clock.advance(timedelta(minutes=11))
    assert not await store.slack_states.async_consume(state)
    clock.advance(timedelta(minutes=-11))
    assert await store.slack_states.async_consume(fresh)


async def test_one_replica_claims_a_refresh_and_the_other_reads_its_token(
    store: SqlStore, db_url: str, clock: FakeClock
) -> None:
    expires = clock.now() + timedelta(minutes=5)
    await store.slack_installs.async_save(
        install("T1", bot_refresh_token="xoxe-1", bot_token_expires_at=int(expires.timestamp()))
    )
    lease = timedelta(seconds=30)
    async with SqlStore(db_url, clock=clock) as other:
        claims = await asyncio.gather(
            store.slack_installs.claim_refresh("-:T1", "xoxe-1", lease),
            other.slack_installs.claim_refresh("-:T1", "xoxe-1", lease),
        )
        assert sorted(claims) == [False, True]
        winner = store if claims[0] else other
        later = clock.now() + timedelta(hours=12)
        assert await winner.slack_installs.finish_refresh(
            "-:T1", "xoxe-1", "xoxb-T1-2", "xoxe-2", later
        )
        # The loser's refresh token is spent: it can neither claim nor overwrite.
        loser = other if claims[0] else store
        assert not await loser.slack_installs.claim_refresh("-:T1", "xoxe-1", lease)
        assert not await loser.slack_installs.finish_refresh(
            "-:T1", "xoxe-1", "xoxb-bad", "xoxe-bad", later
        )
        token = await loser.slack_installs.bot_token("T1")
        assert token is not None
        assert (token.token, token.refresh_token) == ("xoxb-T1-2", "xoxe-2")
        assert token.claimed_until is None


async def test_a_claim_left_by_a_crashed_replica_expires(store: SqlStore, clock: FakeClock) -> None:
    await store.slack_installs.async_save(install("T1", bot_refresh_token="xoxe-1"))
    lease = timedelta(seconds=30)
    assert await store.slack_installs.claim_refresh("-:T1", "xoxe-1", lease)
    assert not await store.slack_installs.claim_refresh("-:T1", "xoxe-1", lease)
    clock.advance(lease)
    assert await store.slack_installs.claim_refresh("-:T1", "xoxe-1", lease)


async def test_many_workspaces_tokens_read_together_are_each_ones_own(store: SqlStore) -> None:
    installs = store.slack_installs
    for team in ("T1", "T2", "T3"):
        await installs.async_save(install(team, bot_token=f"xoxb-{team}"))
    await installs.async_delete_installation(enterprise_id=None, team_id="T2")  # uninstalled
    await installs.async_save(
        install(None, enterprise_id="E1", is_enterprise_install=True, bot_token="xoxb-E1")
    )
    await installs.remember_team("T7", "E1")  # served by its organisation's install
    await installs.async_save(install("T8", enterprise_id="E1", bot_token="xoxb-T8"))
    teams = ["T1", "T2", "T3", "T7", "T8", "T9"]
    together = await installs.bot_tokens(teams)
    assert together == {team: await installs.bot_token(team) for team in teams}
    assert {t: (v.token if v else None) for t, v in together.items()} == {
        "T1": "xoxb-T1",
        "T2": None,
        "T3": "xoxb-T3",
        "T7": "xoxb-E1",
        "T8": "xoxb-T8",
        "T9": None,
    }
