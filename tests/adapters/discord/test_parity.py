"""Command parity: `/quiz` on Discord is generated from the registry's commands — every
subcommand of every feature `quizbot serve` wires (`bot.app.FEATURES`, built by
`bot.app.assemble`) is in the synced command, with its options, and each one works end to
end on the fake Discord."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bot.app import FEATURES
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.demos import DemoDispatcher
from bot.ports import Chat
from storage.store import SqlStore
from tests.adapters.discord.conftest import BankCatalog, DemoKit, InstantRunner, Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord, Json
from tests.adapters.discord.helpers import ADMIN, ask, final_edit, modal_for, said, text_of
from tests.questions.test_team_files import HEADER, ROW
from tests.quiz import quiz_of, service_of


@pytest.fixture
async def full(
    store: Any, chats: dict[str, Chat], bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[DemoKit]:
    """The quiz exactly as `serve` wires it — every feature of `bot.app.FEATURES` (the
    basic commands, generated questions, team packs: review, retire, submit, flags, packs,
    mydata, forget-me, import; the clinic, demos, practice, report, schedule) — on a runner
    at the edge (demos and clinic jobs succeed at once)."""
    runner = InstantRunner()
    async with quiz_of(store, chats, bank, clock, runner=runner, demos=BankCatalog(bank)) as quiz:
        dispatcher = service_of(quiz, DemoDispatcher)
        yield DemoKit(quiz, runner, dispatcher)


def subcommands(fake: FakeDiscord) -> dict[str, Json]:
    (put,) = fake.of("PUT", rf"/applications/{fake.app_id}/guilds/{fake.guild_id}/commands")
    (quiz,) = put.json
    assert quiz["name"] == "quiz" and quiz["contexts"] == [0]  # servers only
    return {o["name"]: o for o in quiz["options"]}


def options(sub: Json) -> dict[str, Json]:
    return {o["name"]: o for o in sub["options"]}


async def test_every_subcommand_is_synced_with_its_options(
    fake: FakeDiscord, run_adapter: Runner, full: DemoKit
) -> None:
    async with run_adapter(quiz=full.quiz):
        subs = subcommands(fake)
    # In the order `/quiz help` lists them: every feature's, none other.
    assert list(subs) == full.quiz.commands.names()
    assert len(FEATURES) == len(full.quiz.registry.features)
    assert {"report", "practice", "leaderboard", "demos", "schedule"} <= set(subs)
    assert all(s["type"] == 1 for s in subs.values())
    topic = options(subs["ask"])["topic"]
    assert topic["autocomplete"] and not topic["required"] and topic["type"] == 3
    assert options(subs["practice"])["topic"]["autocomplete"]
    board = options(subs["leaderboard"])
    assert [c["value"] for c in board["window"]["choices"]] == ["day", "week", "month", "all"]
    assert [c["value"] for c in board["scope"]["choices"]] == ["channel", "workspace"]
    assert [c["value"] for c in options(subs["report"])["scope"]["choices"]][-1] == "workspace"
    assert [c["value"] for c in options(subs["demos"])["policy"]["choices"]] == [
        "auto",
        "button",
        "off",
    ]
    demo = subs["demo"]["options"]
    assert [o["name"] for o in demo] == ["id", "parameters"] and demo[0]["required"]
    assert demo[0]["autocomplete"]
    assert {c["value"] for c in options(subs["lang"])["language"]["choices"]} == {"en", "el"}
    assert list(options(subs["schedule"])) == ["arguments"]  # free text, as /quiz help shows
    clinic = options(subs["clinic"])
    assert list(clinic) == ["snapshot", "gpu_memory"]
    assert (clinic["snapshot"]["type"], clinic["snapshot"]["required"]) == (11, False)  # a file
    gpu = clinic["gpu_memory"]
    assert (gpu["type"], gpu["min_value"], gpu["max_value"]) == (10, 1, 4096)  # a number
    share = options(subs["generated"])["share"]
    assert (share["type"], share["min_value"], share["max_value"]) == (4, 0, 100)  # integer
    assert options(subs["close"]) == {} and options(subs["stats"]) == {}
    # Team packs: fields where free text would read badly.
    for bare in ("submit", "mydata", "forget-me"):
        assert options(subs[bare]) == {}, bare
    assert [c["value"] for c in options(subs["review"])["where"]["choices"]] == ["here"]
    retire = subs["retire"]["options"]
    assert [o["name"] for o in retire] == ["id", "undo"] and retire[0]["required"]
    assert [c["value"] for c in retire[1]["choices"]] == ["undo"]
    packs = options(subs["packs"])
    assert [c["value"] for c in packs["pack"]["choices"]] == ["builtin", "team", "generated"]
    assert packs["value"]["autocomplete"] and packs["value"]["type"] == 3  # on/off, or 0-100
    (file,) = subs["import"]["options"]
    assert (file["name"], file["type"], file["required"]) == ("file", 11, False)
    assert subs["import"]["description"].endswith("(Manage Server)")
    assert "changing it: Manage Server" in subs["packs"]["description"]
    # Descriptions in English and Greek; admin-only ones say so.
    ask_el = subs["ask"]["description_localizations"]["el"]
    assert ask_el == "δημοσιεύει μια ερώτηση σε αυτό το κανάλι"
    assert subs["close"]["description"].endswith("(Manage Server)")
    assert "Διαχείριση διακομιστή" in subs["close"]["description_localizations"]["el"]
    assert "changing it: Manage Server" in subs["demos"]["description"]
    assert all(len(s["description"]) <= 100 for s in subs.values())


async def test_without_a_dev_guild_commands_sync_globally(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter(dev_guild=None):
        (put,) = fake.of("PUT", rf"/applications/{fake.app_id}/commands")
        assert [c["name"] for c in put.json] == ["quiz"]


@pytest.mark.parametrize(
    ("sub", "option", "typed", "offered"),
    [("ask", "topic", "tea", "team"), ("packs", "value", "o", "off")],
)
async def test_team_pack_values_are_offered_as_they_are_typed(
    fake: FakeDiscord,
    run_adapter: Runner,
    full: DemoKit,
    sub: str,
    option: str,
    typed: str,
    offered: str,
) -> None:
    async with run_adapter(quiz=full.quiz):
        inter = await fake.command(sub, {option: typed}, itype=4, focused=option)
        await fake.until(lambda: bool(fake.callbacks(inter)))
        (callback,) = fake.callbacks(inter)
        assert offered in [c["value"] for c in callback.json["data"]["choices"]]


def snapshot_options(fake: FakeDiscord) -> dict[str, Any]:
    return {"snapshot": fake.attach("train.pickle", b"\x80\x04N."), "gpu_memory": 80.0}


def question_file(fake: FakeDiscord) -> dict[str, Any]:
    return {"file": fake.attach("ours.csv", f"{HEADER}\n{ROW}\n".encode())}


MODAL = "modal: "  # the first reply is a form (its title)

# Each subcommand as a user runs it: (options, or a function of the fake that makes them;
# what the first reply says).
CASES: dict[str, tuple[dict[str, Any] | Callable[[FakeDiscord], dict[str, Any]], str]] = {
    "ask": ({"topic": "fragmentation"}, "Done."),
    "practice": ({"topic": "fragmentation"}, "Practice · fragmentation"),
    "leaderboard": ({"window": "week", "scope": "workspace"}, "Workspace leaderboard · this week"),
    "stats": ({}, "You have no answers in this channel yet."),
    "me": ({}, "Your quiz card"),
    "help": ({}, "/quiz schedule"),
    "demo": ({"id": "fragmentation", "parameters": ""}, "Done."),
    "demos": ({"policy": "button"}, "now **button**"),
    "schedule": ({"arguments": "set 09:30 UTC mon-fri"}, "Schedule #"),
    "report": ({"scope": "workspace"}, "Question report · this workspace"),
    "close": ({}, "Done."),
    "lang": ({"language": "el"}, "Ελληνικά"),
    "generated": ({"share": 30}, "From now on 30% of this channel's questions are generated"),
    # The file reaches the clinic (downloaded, analysed on the runner: first the status).
    "clinic": (snapshot_options, "Analysing `train.pickle`"),
    "submit": ({}, MODAL + "Submit a question"),
    "review": ({"where": "here"}, "New submissions will appear in this channel"),
    "retire": ({"id": "team-000000000000"}, "Unknown question id 'team-000000000000'"),
    "packs": ({"pack": "team", "value": "on"}, "Team pack: on (0 approved)"),
    "mydata": ({}, "I sent you a file with everything the quiz stores about you"),
    "forget-me": ({}, "Erase your data?"),
    # The file goes to the import (downloaded, read, stored: one new question).
    "import": (question_file, "1 new question from 1 entries"),
    "live": ({"arguments": "board"}, "No live round has ended in this channel yet"),
    "season": ({"arguments": "start Spring 8"}, "Season Spring runs"),
    "team": ({"arguments": "create Owls"}, "Team Owls is made"),
}


@both_modes
async def test_every_subcommand_works_end_to_end(
    fake: FakeDiscord, run_adapter: Runner, full: DemoKit
) -> None:
    assert set(CASES) == set(full.quiz.commands.names()), "add the new subcommand to CASES"
    async with run_adapter(quiz=full.quiz):
        await ask(fake, "fragmentation", permissions=ADMIN)
        clinic = None
        for name, (opts, expected) in CASES.items():
            values = opts(fake) if callable(opts) else opts
            inter = await fake.command(name, values, permissions=ADMIN, user_id="7501")
            if expected.startswith(MODAL):
                modal = await modal_for(fake, inter)
                assert modal["title"] == expected.removeprefix(MODAL)
                continue
            first = (await said(fake, inter))[0]
            text = text_of(first) + str(first.get("components"))
            assert "Something went wrong" not in text and "Unknown command" not in text, name
            assert expected in text, (name, text)
            clinic = inter if name == "clinic" else clinic
        assert clinic is not None
        await final_edit(fake, clinic, "clinic report of train.pickle")  # the runner's answer
        # Without a file, /quiz clinic says how to send one, and /quiz import how to import.
        (how,) = await said(fake, await fake.command("clinic", {"gpu_memory": 80.0}))
        assert "snapshot attached" in text_of(how)
        (how,) = await said(fake, await fake.command("import", permissions=ADMIN))
        assert "Attach the file to /quiz import" in text_of(how)
        await full.dispatcher.drain()
    snapshot, imported = fake.downloads  # the clinic's snapshot, then the question file
    assert fake.files[snapshot] == b"\x80\x04N." and [j.name for j in full.runner.clinic_jobs] == [
        "train.pickle"
    ]
    assert fake.files[imported].startswith(HEADER.encode())
    # `/quiz demo fragmentation` ran the demo (and the reveal, under policy button, did not).
    assert [j.demo for j in full.runner.jobs] == ["fragmentation"]


async def test_practice_is_private_with_its_own_answer_buttons(
    fake: FakeDiscord, run_adapter: Runner, full: DemoKit, store: SqlStore
) -> None:
    async with run_adapter(quiz=full.quiz):
        inter = await fake.command("practice", {"topic": "fragmentation"}, user_id="7502")
        (question,) = await said(fake, inter)
        assert question["flags"] == EPHEMERAL
        ids = [b["custom_id"] for row in question["components"] for b in row["components"]]
        assert ids and all(i.startswith("quiz:answer:") for i in ids)
        click = await fake.click(question.get("id", "0"), ids[0], user_id="7502")
        (outcome,) = await said(fake, click)
        assert outcome["flags"] == EPHEMERAL and "never scored" in text_of(outcome)
