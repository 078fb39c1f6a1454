"""`SqlStore`: the repositories over one database, started and stopped as a context manager."""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from bot.clock import Clock, SystemClock
from bot.errors import StorageError
from bot.lifecycle import Lifecycle
from storage._session import sessionmaker
from storage.answers import SqlAnswerRepository
from storage.dashboard import SqlDashboard
from storage.deliveries import SqlDeliveryLog
from storage.demo_runs import SqlDemoRunRepository
from storage.engine import check_schema, create_engine, redact, upgrade
from storage.faults import RetryObserver
from storage.live import SqlLiveRepository
from storage.members import SqlMemberData
from storage.posts import SqlPostRepository
from storage.practice import SqlPracticeRepository
from storage.questions import SqlQuestionVersions
from storage.refs import ChannelDefaults, RefResolver
from storage.report import SqlReportRepository
from storage.schedules import SqlScheduleRepository
from storage.scores import SqlScoreRepository
from storage.seasons import SqlSeasonRepository
from storage.settings import SqlSettingsRepository
from storage.slack_installs import SqlSlackInstallations, SqlSlackOAuthStates
from storage.team import SqlTeamPackRepository
from storage.teams import SqlTeamRepository
from storage.web import SqlWebSessions

log = logging.getLogger(__name__)


class SqlStore(Lifecycle):
    """All repositories on one engine.

    ``migrate=True`` upgrades the schema at start: the embedded SQLite default creates its
    file on first run; PostgreSQL deployments usually run ``quizbot db upgrade`` instead.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock | None = None,
        migrate: bool = False,
        engine: AsyncEngine | None = None,
        defaults: ChannelDefaults | None = None,
        observer: RetryObserver | None = None,
    ) -> None:
        self.url = url
        self.clock = clock or SystemClock()
        self._migrate = migrate
        self.engine = engine or create_engine(url)
        self.dialect = self.engine.dialect.name
        self.sessions = sessionmaker(self.engine)
        self.refs = RefResolver(self.dialect, defaults)
        self.posts = SqlPostRepository(self.sessions, self.refs)
        self.answers = SqlAnswerRepository(self.sessions, self.refs, observer=observer)
        self.deliveries = SqlDeliveryLog(self.sessions)
        self.scores = SqlScoreRepository(self.sessions)
        self.settings = SqlSettingsRepository(self.sessions, self.refs, self.clock)
        self.questions = SqlQuestionVersions(self.sessions, self.clock)
        self.demo_runs = SqlDemoRunRepository(self.sessions, self.refs)
        self.practice = SqlPracticeRepository(self.sessions, self.refs)
        self.reports = SqlReportRepository(self.sessions)
        self.schedules = SqlScheduleRepository(self.sessions, self.refs)
        self.team = SqlTeamPackRepository(self.sessions, self.refs, self.clock)
        self.members = SqlMemberData(self.sessions, self.refs, self.clock)
        self.dashboard = SqlDashboard(self.sessions, self.refs.defaults.timezone)
        self.live = SqlLiveRepository(self.sessions, self.refs)
        self.web = SqlWebSessions(self.sessions)
        self.seasons = SqlSeasonRepository(self.sessions, self.refs)
        self.leagues = SqlTeamRepository(self.sessions, self.refs)
        self.slack_installs = SqlSlackInstallations(self.sessions, self.clock)
        self.slack_states = SqlSlackOAuthStates(self.sessions, self.clock)

    async def initialize(self) -> None:
        try:
            if self._migrate:
                await upgrade(self.engine)
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            await check_schema(self.engine)
        except StorageError:
            await self.engine.dispose()
            raise
        except (OperationalError, DBAPIError, OSError) as exc:
            await self.engine.dispose()
            raise StorageError(
                f"cannot open the database {redact(self.url)}: {_reason(exc)}. "
                "Check QUIZBOT_DATABASE_URL (unset it to use the embedded SQLite file)"
            ) from exc

    async def shutdown(self) -> None:
        await self.answers.shutdown()
        await self.engine.dispose()

    async def ping(self) -> bool:
        try:
            async with self.sessions() as s:
                await s.execute(text("SELECT 1"))
            return True
        except Exception:
            return False


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    return str(orig).splitlines()[0] if str(orig) else type(orig).__name__


__all__ = ["AsyncSession", "SqlStore"]
