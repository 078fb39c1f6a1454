"""Question files on Discord: `/quiz import file:<attachment>` (admins). What can be refused
without the file is refused at once, nothing downloaded (who sent it, what kind of file,
its announced size); otherwise the command is deferred privately and the import report
replaces "thinking…"; importing the same file again adds nothing."""

from __future__ import annotations

from bot.features import Quiz
from tests.adapters.discord.conftest import Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord
from tests.adapters.discord.helpers import (
    ADMIN,
    answered_at_once,
    channel_of,
    final_edit,
    said,
    text_of,
)
from tests.questions.test_team_files import HEADER, ROW

ROOT, BOB = "7701", "7702"  # ROOT has Manage Server
TWO_ROWS = f"{HEADER}\n{ROW}\n{ROW.replace(',B,', ',Z,')}\n".encode()


@both_modes
async def test_an_admins_question_file_is_imported_and_reported_privately(
    fake: FakeDiscord, run_adapter: Runner, team: Quiz
) -> None:
    ours = fake.attach("ours.csv", TWO_ROWS)
    async with run_adapter(quiz=team) as adapter:
        inter = await fake.command("import", {"file": ours}, user_id=ROOT, permissions=ADMIN)
        done = await final_edit(fake, inter, "Question import")
        report = text_of(done.json)
        assert "1 new question from 2 entries; 0 already in the team pack, 1 with problems" in (
            report
        )
        assert "They are in the team pack now." in report
        assert "line 3: answer: 'Z' is not a choice letter" in report
        (callback,) = fake.callbacks(inter)
        assert callback.json == {"type": 5, "data": {"flags": EPHEMERAL}}  # private, at once
        again = await fake.command("import", {"file": ours}, user_id=ROOT, permissions=ADMIN)
        repeat = text_of((await final_edit(fake, again, "Question import")).json)
        assert "0 new questions from 2 entries; 1 already in the team pack" in repeat
        await adapter.idle()
    assert fake.downloads == [ours["id"], ours["id"]]
    assert fake.of("POST", r"/channels/\d+/messages") == []  # nothing said in the channel
    pack = await team.service.pools.team_pool(channel_of(fake))
    assert len(pack) == 1


@both_modes
async def test_a_file_that_cannot_be_imported_is_refused_before_it_is_downloaded(
    fake: FakeDiscord, run_adapter: Runner, team: Quiz
) -> None:
    ours = fake.attach("ours.csv", TWO_ROWS)
    notes = fake.attach("notes.pdf", b"%PDF-1.7")
    big = fake.attach("big.csv", TWO_ROWS, size=50 * 1000 * 1000)  # as Discord announces it
    async with run_adapter(quiz=team) as adapter:
        member = await fake.command("import", {"file": ours}, user_id=BOB)
        assert "Only members with the Manage Server permission" in (
            await answered_at_once(fake, member)
        )
        pdf = await fake.command("import", {"file": notes}, user_id=ROOT, permissions=ADMIN)
        said_pdf = await answered_at_once(fake, pdf)
        assert "notes.pdf is not a question file. Attach the file to /quiz import" in said_pdf
        huge = await fake.command("import", {"file": big}, user_id=ROOT, permissions=ADMIN)
        assert "big.csv is 50.0 MB, over the 8 MiB limit" in await answered_at_once(fake, huge)
        greek = await fake.command(
            "import", {"file": notes}, user_id=ROOT, permissions=ADMIN, locale="el"
        )
        assert "δεν είναι αρχείο ερωτήσεων" in await answered_at_once(fake, greek)
        # Without a file, /quiz import says how (admins), and is refused to anyone else.
        (how,) = await said(fake, await fake.command("import", user_id=ROOT, permissions=ADMIN))
        assert "Attach the file to /quiz import" in text_of(how)
        (refused,) = await said(fake, await fake.command("import", user_id=BOB))
        assert "Only members with the Manage Server permission" in text_of(refused)
        await adapter.idle()
    assert fake.downloads == []
    assert len(await team.service.pools.team_pool(channel_of(fake))) == 0
