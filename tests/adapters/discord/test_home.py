"""`/quiz me` on Discord (gateway and HTTP): the member's card, privately (ephemeral),
with their own figures and the "Practice now" button."""

from __future__ import annotations

from bot.app import FEATURES
from bot.home import PRACTICE_NOW
from tests.adapters.discord.conftest import QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord
from tests.adapters.discord.helpers import ask, custom_ids, said, text_of


@both_modes
async def test_quiz_me_shows_the_members_own_card_privately(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith
) -> None:
    async with quiz_with(*FEATURES) as quiz, run_adapter(quiz=quiz):
        posted, post_id = await ask(fake, "fragmentation")
        answer = next(i for i in custom_ids(posted) if i.startswith("quiz:answer:"))
        click = await fake.click(posted["id"], answer, user_id="7601")
        await said(fake, click)
        assert await quiz.service.close(post_id) is not None

        inter = await fake.command("me", user_id="7601")
        (card,) = await said(fake, inter)
        text = text_of(card)
        assert card.get("flags") == EPHEMERAL
        assert "Your quiz card" in text and "Rank 1 of 1 in this workspace" in text
        assert "Answered 1, correct" in text
        assert custom_ids(card) == [f"quiz:{PRACTICE_NOW}:0:{fake.channel_id}"]

        other = await fake.command("me", user_id="7602")
        (empty,) = await said(fake, other)
        assert empty.get("flags") == EPHEMERAL
        assert "No scored answers yet" in text_of(empty)
