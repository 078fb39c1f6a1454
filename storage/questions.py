"""Question versions: the exact content each post showed, keyed by content hash."""

from __future__ import annotations

import json
from dataclasses import replace

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.bank import question_from_dict, question_to_dict
from bot.clock import Clock
from bot.domain import Question
from storage._sql import SqlRepository, insert
from storage.models import QuestionVersionRow


class SqlQuestionVersions(SqlRepository):
    def __init__(self, sessions: async_sessionmaker[AsyncSession], clock: Clock) -> None:
        super().__init__(sessions)
        self._clock = clock
        self._cache: dict[str, Question] = {}

    async def save(self, question: Question) -> None:
        if question.content_hash in self._cache:
            return
        async with self._sessions.begin() as s:
            await s.execute(
                insert(self._dialect, QuestionVersionRow)
                .values(
                    hash=question.content_hash,
                    question_id=question.id,
                    data=json.dumps(question_to_dict(question), ensure_ascii=False),
                    created_at=self._clock.now(),
                )
                .on_conflict_do_nothing()
            )
        self._cache[question.content_hash] = question

    async def get(self, content_hash: str) -> Question | None:
        if (q := self._cache.get(content_hash)) is not None:
            return q
        async with self._sessions() as s:
            data = (
                await s.execute(
                    select(QuestionVersionRow.data).where(QuestionVersionRow.hash == content_hash)
                )
            ).scalar_one_or_none()
        if data is None:
            return None
        q = question_from_dict(json.loads(data))
        q = replace(q, content_hash=content_hash)  # the key it was stored under
        self._cache[content_hash] = q
        return q
