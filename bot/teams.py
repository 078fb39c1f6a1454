"""Team leagues: teams within a workspace, ranked by a fair score.

`/quiz team create <name>`, `join <name>` (an admin: `join <name> @member`), `leave`,
`list`, `board [day|week|month|all|season]`, `rule [top3|per-member]` (admins change it),
`balance <n>` (admins: a proposal of n teams, accepted with a button) and `link <name>
<@group>` (admins: the team follows a Slack user group or a Discord role, read through the
platform's API — `GroupDirectory` — and refreshed every 15 minutes by `TeamLinker` in the
scheduler's pass; a group's member on another team stays there).

Rules (docs/leaderboards.md, "Seasons and teams"):

- A member is on one team at most per workspace (the workspace's "league").
- A team's score must not reward size. Both fair scores are computed and shown:
  **top 3** — the sum of the points of its three best members in the window; **per active
  member** — its members' points divided by those who answered at least once in the
  window. The workspace chooses which one ranks (`/quiz team rule`, default top 3).
- Points come from the boards' aggregates: the workspace board of the window (local dates
  of the caller's channel), or the season's board — never a scan of the answers.
- `balance <n>`: the members with results in the last 30 days (and everyone already on a
  team), sorted by their points, each put on the team with the fewest points so far
  (greedy; ties: fewer members, then the first team). The spread (the strongest team's
  points less the weakest's) is reported; an admin accepts with the button, which moves
  everyone proposed onto the workspace's teams (its n teams when it has n, else "Team 1"
  … "Team n").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bot.admin import AdminStatus, admin_refusal
from bot.clock import Clock
from bot.commands import Command, Invocation, Reply
from bot.domain import BoardPeriod, BoardWindow, ChannelRef, Locale, Platform, UserRef
from bot.errors import UserFacingError
from bot.features import ButtonKind, Feature, Parts
from bot.formats import number
from bot.i18n import N_, Translator, translator
from bot.messages import Button, ButtonStyle, Message
from bot.pages import Page, PageHandler, PageRequest, Render
from bot.quiz import BulkLine
from bot.quoting import quoted
from bot.render import MEDALS
from bot.scoring import board_period, local_day
from bot.seasons import season_dates
from bot.team import Workspace

if TYPE_CHECKING:
    from bot.interactions import Click
    from bot.quiz import QuizService
    from bot.seasons import SeasonRepository

USAGE = "team [create|join|leave|list|board|rule|balance|link] …"
LINK_REFRESH = timedelta(minutes=15)
MAX_NAME = 32
MAX_TEAMS = 50
BALANCE_DAYS = 30
ACCEPT = "team-accept"  # post 0; value: the proposal id
_MENTION = re.compile(r"<@!?([A-Za-z0-9_.-]+)(?:\|([^>]*))?>|@([A-Za-z0-9_.-]+)")


class TeamRule(StrEnum):
    TOP3 = "top3"
    PER_MEMBER = "per-member"


@dataclass(frozen=True, slots=True)
class Team:
    id: int
    name: str
    members: int = 0


@dataclass(frozen=True, slots=True)
class TeamScore:
    """A team's results in a window or a season."""

    name: str
    members: int
    active: int  # members who answered at least once
    top3: int  # the points of its three best members
    points: int  # everyone's points

    @property
    def per_member(self) -> float:
        return self.points / self.active if self.active else 0.0

    def score(self, rule: TeamRule) -> float:
        return float(self.top3) if rule is TeamRule.TOP3 else self.per_member


@dataclass(frozen=True, slots=True)
class Synced:
    """What following a group changed: display names of who joined and left, and of the
    group's members who stay on another team (one team per member)."""

    joined: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    elsewhere: tuple[str, ...] = ()


@runtime_checkable
class GroupDirectory(Protocol):
    """A `Chat` that can read a platform group's members (a Slack user group, a Discord
    role); a platform without groups (the console) has none."""

    async def group_members(self, workspace: str, group: str) -> list[UserRef] | None:
        """The members of `group` (its id), or None when the bot cannot read it (no
        such group, a missing scope or intent)."""
        ...


_GROUP = re.compile(r"<!subteam\^([A-Z0-9]+)(?:\|[^>]*)?>|<@&(\d+)>|([A-Z0-9]{6,}|\d{6,})")


def group_of(word: str) -> str | None:
    """``<!subteam^S0123|@eng>`` (Slack), ``<@&123…>`` (Discord) or a bare id: the id."""
    found = _GROUP.fullmatch(word)
    if found is None:
        return None
    return found.group(1) or found.group(2) or found.group(3)


class TeamNameTaken(Exception):
    pass


class NoSuchTeam(Exception):
    pass


class AlreadyOnTeam(Exception):
    def __init__(self, team: str) -> None:
        super().__init__(team)
        self.team = team


class TeamRepository(Protocol):
    async def create(self, ws: Workspace, name: str, now: datetime) -> Team:
        """Raises `TeamNameTaken` (in any case)."""
        ...

    async def join(self, user: UserRef, name: str, now: datetime) -> Team:
        """Raises `NoSuchTeam`, or `AlreadyOnTeam` (with the member's team)."""
        ...

    async def leave(self, user: UserRef) -> str | None:
        """The team left, or None."""
        ...

    async def teams(self, ws: Workspace) -> list[Team]:
        """The workspace's teams by name, with their number of members."""
        ...

    async def team_of(self, user: UserRef) -> str | None: ...

    async def teams_of(self, users: Sequence[UserRef]) -> dict[str, str]:
        """`team_of` of many members of one workspace, by member key (none: absent)."""
        ...

    async def rule(self, ws: Workspace) -> TeamRule: ...

    async def set_rule(self, ws: Workspace, rule: TeamRule) -> None: ...

    async def standings(
        self, ws: Workspace, period: BoardPeriod | None = None, season_id: int | None = None
    ) -> TeamBoard:
        """Every team's results (in the workspace board of `period`, or the season's) and
        the workspace's rule, in one read."""
        ...

    async def recent(self, ws: Workspace, since: date) -> list[tuple[UserRef, int]]:
        """Each member with results since `since` (or on a team): their points since."""
        ...

    async def propose(
        self, ws: Workspace, teams: Sequence[Sequence[UserRef]], now: datetime
    ) -> int:
        """Store a balance proposal; its id."""
        ...

    async def accept(self, ws: Workspace, proposal: int, now: datetime) -> list[Team] | None:
        """Move the proposed members onto the teams, once; None when already accepted or
        unknown."""
        ...

    async def link(self, ws: Workspace, name: str, group: str) -> Team:
        """The team follows `group` from now on; raises `NoSuchTeam`."""
        ...

    async def linked(self) -> list[tuple[Workspace, str, str]]:
        """Every team that follows a group: (workspace, team name, group id)."""
        ...

    async def sync(
        self, ws: Workspace, name: str, members: Sequence[UserRef], now: datetime
    ) -> Synced:
        """The team's members become `members` (those on another team stay there)."""
        ...


def balance(players: Sequence[tuple[UserRef, int]], n: int) -> list[list[tuple[UserRef, int]]]:
    """Greedy: strongest first, each onto the team with the fewest points so far (ties:
    fewer members, then the first)."""
    teams: list[list[tuple[UserRef, int]]] = [[] for _ in range(n)]
    totals = [0] * n
    for who, points in sorted(players, key=lambda p: (-p[1], p[0].key)):
        i = min(range(n), key=lambda k: (totals[k], len(teams[k]), k))
        teams[i].append((who, points))
        totals[i] += points
    return teams


def spread(teams: Sequence[Sequence[tuple[UserRef, int]]]) -> int:
    totals = [sum(p for _, p in team) for team in teams]
    return max(totals) - min(totals) if totals else 0


@dataclass(frozen=True, slots=True)
class TeamBoard:
    """The teams' results on one board, with the rule the workspace ranks them by."""

    rule: TeamRule
    scores: list[TeamScore]

    def ranked(self) -> list[TeamScore]:
        return ranked(self.scores, self.rule)


def ranked(scores: Sequence[TeamScore], rule: TeamRule) -> list[TeamScore]:
    other = TeamRule.PER_MEMBER if rule is TeamRule.TOP3 else TeamRule.TOP3
    return sorted(scores, key=lambda s: (-s.score(rule), -s.score(other), s.name.casefold()))


def mentioned(word: str, platform: Platform, workspace: str) -> UserRef | None:
    """``<@U1|ann>``, ``<@123>``, ``<@!123>`` or ``@ann`` as a member of the workspace."""
    found = _MENTION.fullmatch(word)
    if found is None:
        return None
    uid = found.group(1) or found.group(3)
    return UserRef(platform, workspace, uid, found.group(2) or uid)


def _name(words: Sequence[str], t: Translator) -> str:
    name = " ".join(words).strip()
    if not name:
        raise UserFacingError(t("Name the team. Example: /quiz team create Owls"))
    if len(name) > MAX_NAME or any(not (c.isprintable()) or c in "<>@`*_~" for c in name):
        raise UserFacingError(
            t(
                "A team's name has 1 to {limit} characters, without < > @ ` * _ ~. "
                "Nothing was stored.",
                limit=MAX_NAME,
            )
        )
    return name


def _no_such_team(name: str, t: Translator) -> UserFacingError:
    return UserFacingError(
        t("There is no team called {name}: /quiz team list shows them.", name=quoted(name))
    )


def board_message(
    scores: Sequence[TeamScore], rule: TeamRule, what: str, locale: Locale
) -> Message:
    t = translator(locale)
    title = t("Team board · {what}", what=what)
    if not scores:
        return Message(title=title, body=t("No teams yet. Make one: /quiz team create <name>"))
    lines = []
    for i, s in enumerate(ranked(scores, rule)):
        medal = MEDALS[i] if i < len(MEDALS) and s.score(rule) > 0 else f"{i + 1}."
        lines.append(
            t(
                "{medal} {name} — top 3: {top3} pts · per active member: {per} pts "
                "({active} of {members} active)",
                medal=medal,
                name=s.name,
                top3=s.top3,
                per=f"{s.per_member:.1f}",
                active=s.active,
                members=s.members,
            )
        )
    ranks = t("ranked by the top 3") if rule is TeamRule.TOP3 else t("ranked per active member")
    return Message(title=title, body="\n".join(lines), footer=ranks)


class TeamLinker:
    """Keeps teams that follow a platform group in step with it: every `LINK_REFRESH`, in
    the scheduler's pass (each replica refreshes the teams of the platforms it runs; a
    refresh is idempotent)."""

    def __init__(self, service: QuizService, teams: TeamRepository, clock: Clock) -> None:
        self.service = service
        self.teams = teams
        self.clock = clock
        self.last: datetime | None = None
        self.linked = False  # any team followed a group at the last refresh

    async def run(self, now: datetime) -> int:
        """Refresh every linked team when due; how many were refreshed."""
        if self.last is not None and now - self.last < LINK_REFRESH:
            return 0
        self.last = now
        done = 0
        found = await self.teams.linked()
        self.linked = bool(found)
        for ws, name, group in found:
            chat = self.service.chats.get(ws.platform)
            if not isinstance(chat, GroupDirectory):
                continue
            members = await chat.group_members(ws.id, group)
            if members is not None:  # unreadable now: the team stays as it was
                await self.teams.sync(ws, name, members, now)
                done += 1
        return done

    async def tick(self, now: datetime) -> int:
        """The scheduler's pass (a feature's ticker)."""
        return await self.run(now)

    async def next_event(self, now: datetime) -> datetime | None:
        """The next refresh, while any team follows a group (none: no event)."""
        return self.last + LINK_REFRESH if self.last is not None and self.linked else None


def feature(parts: Parts) -> Feature:
    linker = TeamLinker(parts.service, parts.store.leagues, parts.clock)
    return replace(
        team_feature(parts.store.leagues, parts.store.seasons, parts.clock), tickers=[linker]
    )


def team_feature(teams: TeamRepository, seasons: SeasonRepository, clock: Clock) -> Feature:
    async def admin(inv: Invocation, what: str, t: Translator) -> str | None:
        status = await inv.admin()
        if status is AdminStatus.YES:
            return None
        return admin_refusal(inv.channel.platform, f"team {what}", status, t)

    async def team(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        ws = Workspace.of(inv.channel)
        action = args[0].lower() if args else "list"
        rest = args[1:]
        now = clock.now()
        if action == "create":
            name = _name(rest, t)
            if len(await teams.teams(ws)) >= MAX_TEAMS:
                raise UserFacingError(
                    t("This workspace has {count} teams, the most it may have.", count=MAX_TEAMS)
                )
            try:
                made = await teams.create(ws, name, now)
            except TeamNameTaken:
                raise UserFacingError(
                    t(
                        "There is already a team called {name}: pick another name.",
                        name=quoted(name),
                    )
                ) from None
            body = t("Team {name} is made. Join it: /quiz team join {name}", name=made.name)
            return [Reply(Message(body=body), private=False)]
        if action == "join":
            who = inv.user
            if rest and (other := mentioned(rest[-1], inv.channel.platform, ws.id)) is not None:
                if (refusal := await admin(inv, "join", t)) is not None:
                    return [Reply(Message(body=refusal))]
                who, rest = other, rest[:-1]
            name = _name(rest, t)
            try:
                joined = await teams.join(who, name, now)
            except NoSuchTeam:
                raise _no_such_team(name, t) from None
            except AlreadyOnTeam as exc:
                raise UserFacingError(
                    t(
                        "{name} is on team {team} already: one team per member. Leave it first: "
                        "/quiz team leave",
                        name=who.display or who.user,
                        team=exc.team,
                    )
                ) from None
            body = t("{name} joined team {team}.", name=who.display or who.user, team=joined.name)
            return [Reply(Message(body=body), private=False)]
        if action == "leave":
            left = await teams.leave(inv.user)
            if left is None:
                return [Reply(Message(body=t("You are not on a team.")))]
            return [Reply(Message(body=t("You left team {team}.", team=left)))]
        if action == "list":
            found = await teams.teams(ws)
            if not found:
                return [Reply(Message(body=t("No teams yet. Make one: /quiz team create <name>")))]
            mine = await teams.team_of(inv.user)
            lines = [
                t.n(
                    "*{name}* · {count} member",
                    "*{name}* · {count} members",
                    tm.members,
                    name=tm.name,
                )
                for tm in found
            ]
            lines.append(t("Your team: {team}", team=mine) if mine else t("You are not on a team."))
            return [Reply(Message(title=t("Teams"), body="\n".join(lines)))]
        if action == "board":
            return await _board(service, inv, rest, ws, now, t)
        if action == "rule":
            current = await teams.rule(ws)
            if not rest:
                return [Reply(Message(body=_rule_text(current, t)))]
            if (refusal := await admin(inv, "rule", t)) is not None:
                return [Reply(Message(body=refusal))]
            try:
                rule = TeamRule(rest[0].lower())
            except ValueError:
                raise UserFacingError(
                    t("Unknown rule {value}: use top3 or per-member.", value=quoted(rest[0]))
                ) from None
            await teams.set_rule(ws, rule)
            return [Reply(Message(body=_rule_text(rule, t)), private=False)]
        if action == "balance":
            if (refusal := await admin(inv, "balance", t)) is not None:
                return [Reply(Message(body=refusal))]
            return await _balance(inv, rest, ws, now, t)
        if action == "link":
            if (refusal := await admin(inv, "link", t)) is not None:
                return [Reply(Message(body=refusal))]
            return await _link(service, inv, rest, ws, now, t)
        raise UserFacingError(
            t(
                "Unknown team command {value}: use create, join, leave, list, board, rule, "
                "balance or link. Example: /quiz team list",
                value=quoted(args[0]),
            )
        )

    async def _board(
        service: QuizService,
        inv: Invocation,
        words: list[str],
        ws: Workspace,
        now: datetime,
        t: Translator,
    ) -> list[Reply]:
        word = words[0].lower() if words else "all"
        windows = {
            "day": BoardWindow.DAY,
            "today": BoardWindow.DAY,
            "week": BoardWindow.WEEK,
            "month": BoardWindow.MONTH,
            "all": BoardWindow.ALL,
        }
        if word == "season":
            current = await seasons.current(inv.channel, now)
            if current is None:
                raise UserFacingError(t("No season is running in this channel."))
            board = await teams.standings(ws, season_id=current.id)
            what = t("season {name}", name=current.name)
        elif word in windows:
            zone = (await service.store.settings.get(inv.channel)).timezone
            period = board_period(windows[word], now, zone)
            board = await teams.standings(ws, period=period)
            what = {
                BoardWindow.DAY: t("today"),
                BoardWindow.WEEK: t("this week"),
                BoardWindow.MONTH: t("this month"),
                BoardWindow.ALL: t("all time"),
            }[windows[word]]
        else:
            raise UserFacingError(
                t(
                    "Unknown team board {value}: use day, week, month, all or season.",
                    value=quoted(words[0]),
                )
            )
        return [Reply(board_message(board.scores, board.rule, what, inv.locale), private=False)]

    async def _balance(
        inv: Invocation, words: list[str], ws: Workspace, now: datetime, t: Translator
    ) -> list[Reply]:
        if len(words) != 1 or not words[0].isdigit() or not 2 <= int(words[0]) <= MAX_TEAMS:
            raise UserFacingError(
                t("How many teams? 2 to {limit}. Example: /quiz team balance 4", limit=MAX_TEAMS)
            )
        n = int(words[0])
        since = local_day(now, "UTC") - timedelta(days=BALANCE_DAYS - 1)
        players = await teams.recent(ws, since)
        if len(players) < n:
            raise UserFacingError(
                t.n(
                    "Only {count} member played in the last 30 days: too few for {teams} teams.",
                    "Only {count} members played in the last 30 days: too few for {teams} teams.",
                    len(players),
                    teams=n,
                )
            )
        proposal = balance(players, n)
        pid = await teams.propose(ws, [[u for u, _ in team] for team in proposal], now)
        lines = []
        for i, members in enumerate(proposal):
            names = ", ".join(u.display or u.user for u, _ in members)
            lines.append(
                t(
                    "*{n}.* {points} pts: {names}",
                    n=i + 1,
                    points=sum(p for _, p in members),
                    names=names,
                )
            )
        lines.append(t("Spread (strongest less weakest): {points} pts", points=spread(proposal)))
        button = Button(t("Accept these teams"), ACCEPT, 0, str(pid), ButtonStyle.PRIMARY)
        return [
            Reply(
                Message(
                    title=t("{count} balanced teams on the last 30 days", count=n),
                    body="\n".join(lines),
                    buttons=(button,),
                )
            )
        ]

    async def _link(
        service: QuizService,
        inv: Invocation,
        words: list[str],
        ws: Workspace,
        now: datetime,
        t: Translator,
    ) -> list[Reply]:
        group = group_of(words[-1]) if len(words) >= 2 else None
        if group is None:
            raise UserFacingError(
                t(
                    "Name the team and the group: /quiz team link <name> <@group> (a Slack "
                    "user group, a Discord role)."
                )
            )
        name = _name(words[:-1], t)
        chat = service.chat(inv.channel)
        if not isinstance(chat, GroupDirectory):
            raise UserFacingError(t("This platform has no groups a team could follow."))
        members = await chat.group_members(ws.id, group)
        if members is None:
            raise UserFacingError(
                t(
                    "I cannot read the members of {group}: on Slack the app needs the "
                    "usergroups:read scope, on Discord the Server Members intent. Nothing "
                    "was stored.",
                    group=quoted(words[-1]),
                )
            )
        try:
            await teams.link(ws, name, group)
        except NoSuchTeam:
            raise _no_such_team(name, t) from None
        done = await teams.sync(ws, name, members, now)
        lines = [
            t(
                "Team {name} follows {group} now ({count} members; refreshed every 15 minutes).",
                name=name,
                group=words[-1],
                count=len(members),
            )
        ]
        if done.elsewhere:
            lines.append(
                t(
                    "On another team already (one team per member): {names}",
                    names=", ".join(done.elsewhere),
                )
            )
        return [Reply(Message(body="\n".join(lines)), private=False)]

    async def accepted(click: Click, locale: Locale) -> Message:
        t = translator(locale)
        ws = Workspace.of(click.channel)
        if not click.value.isdigit():
            return Message(body=t("That proposal is not known."))
        done = await teams.accept(ws, int(click.value), clock.now())
        if done is None:
            return Message(body=t("That proposal was accepted already (or is not known)."))
        lines = [
            t.n("*{name}* · {count} member", "*{name}* · {count} members", tm.members, name=tm.name)
            for tm in done
        ]
        return Message(title=t("The teams are set"), body="\n".join(lines))

    async def note(channel: ChannelRef, user: UserRef, locale: Locale) -> str | None:
        """Under boards and stats: the member's team."""
        mine = await teams.team_of(user)
        if mine is None:
            return None
        t = translator(locale)
        return t("Your team: {team} (/quiz team board)", team=mine)

    async def notes(asks: Sequence[tuple[ChannelRef, UserRef, Locale]]) -> list[str | None]:
        """`note` of many members of one workspace: their teams in one read."""
        names = await teams.teams_of([user for _, user, _ in asks])
        out: list[str | None] = []
        for _, user, locale in asks:
            t = translator(locale)
            mine = names.get(user.key)
            out.append(
                None if mine is None else t("Your team: {team} (/quiz team board)", team=mine)
            )
        return out

    async def report_note(channel: ChannelRef, locale: Locale) -> str | None:
        """Under the admin report: the teams, all time, by the workspace's rule."""
        ws = Workspace.of(channel)
        board = await teams.standings(ws)
        rule, scores = board.rule, board.ranked()
        if not scores:
            return None
        t = translator(locale)
        digits = 0 if rule is TeamRule.TOP3 else 1
        shown = " · ".join(f"{s.name} {number(s.score(rule), locale, digits)}" for s in scores[:10])
        if rule is TeamRule.TOP3:
            return t("Teams (the points of their 3 best members): {teams}", teams=shown)
        return t("Teams (points per active member): {teams}", teams=shown)

    return Feature(
        "teams",
        board_notes=[BulkLine(note, notes)],
        report_notes=[report_note],
        commands=[
            Command(
                "team",
                team,
                USAGE,
                N_("team league: make, join and leave teams, the team board, balanced teams"),
            )
        ],
        buttons=[ButtonKind(ACCEPT, click=accepted, admin="team balance", about_post=False)],
        pages=[Page("league", league_page(teams, seasons, clock), N_("League"), nav=True)],
    )


def league_page(teams: TeamRepository, seasons: SeasonRepository, clock: Clock) -> PageHandler:
    """The dashboard's league page: the channel's running season (its boards by points and
    by accuracy), its past seasons, and the team board (both fair scores, the workspace's
    rule first) for all time and the running season — the chat's own reads."""

    async def page(req: PageRequest) -> Render:
        t = translator(req.locale)
        channel = req.channel
        now = clock.now()
        zone = (await req.store.settings.get(channel)).timezone
        current = await seasons.current(channel, now)
        board = await seasons.board(current, req.member, channel) if current else None
        running = current.id if current else None
        past = [s for s in await seasons.listed(channel, limit=10) if s.id != running]
        whole = await teams.standings(req.workspace)
        rule, all_time = whole.rule, whole.ranked()
        in_season = (
            (await teams.standings(req.workspace, season_id=current.id)).ranked() if current else []
        )
        return Render(
            "league.html",
            {
                "channels": req.channels,
                "chosen": req.chosen,
                "channel": channel,
                "season": current,
                "season_dates": season_dates(current, zone) if current else "",
                "board": board,
                "past": [(s, season_dates(s, zone)) for s in past],
                "rule": rule.value,
                "rule_text": _rule_text(rule, t),
                "teams": [(x, number(x.per_member, req.locale, 1)) for x in all_time],
                "season_teams": [(x, number(x.per_member, req.locale, 1)) for x in in_season],
            },
        )

    return page


def _rule_text(rule: TeamRule, t: Translator) -> str:
    if rule is TeamRule.TOP3:
        return t(
            "Teams are ranked by the points of their 3 best members (change: /quiz team rule "
            "per-member)."
        )
    return t("Teams are ranked by points per active member (change: /quiz team rule top3).")


__all__ = [
    "ACCEPT",
    "AlreadyOnTeam",
    "GroupDirectory",
    "NoSuchTeam",
    "Synced",
    "Team",
    "TeamLinker",
    "TeamNameTaken",
    "TeamRepository",
    "TeamRule",
    "TeamScore",
    "balance",
    "board_message",
    "feature",
    "group_of",
    "mentioned",
    "ranked",
    "spread",
]
