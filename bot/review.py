"""Reviewing team questions (admins): `/quiz review` lists the pending ones privately
with Approve / Reject buttons, and the reported ones with Retire; `/quiz review here`
makes the channel the review channel, where each new submission appears as a card;
`/quiz retire <id> [undo]` retires a question (bank or team) for the workspace.

A decision is a conditional update: a second approval, or a rejection after an approval,
is told who decided first and changes nothing. The author is told privately, in the
channel they submitted from; the card in the review channel loses its buttons.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable

from bot.commands import Admin, Command, CommandOption, Invocation, Reply
from bot.domain import Locale, Question, choice_letter
from bot.errors import UserFacingError
from bot.features import ButtonKind, Feature, FormKind, Parts
from bot.forms import FieldKind, Form, FormField, Submission, SubmitReply
from bot.i18n import N_, Translator, translator
from bot.interactions import NOT_AVAILABLE, Click
from bot.logs import ThrottledLog
from bot.messages import Button, ButtonStyle, Message
from bot.quiz import QuizService
from bot.quoting import cut
from bot.render import difficulty_stars
from bot.team import (
    FlaggedQuestion,
    FlagReason,
    SubmissionState,
    TeamPackRepository,
    TeamQuestion,
    Workspace,
)

log = logging.getLogger(__name__)

# Buttons about a submission or a question (post id 0; the value names it), for admins.
APPROVE, REJECT, RETIRE = "approve", "reject", "retire"
REJECT_FORM = "reject"
REASON = "reason"
SHOWN = 5  # cards per list: a reply holds their buttons on every platform
_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
REASONS = {
    FlagReason.WRONG_ANSWER: N_("wrong answer"),
    FlagReason.AMBIGUOUS: N_("ambiguous"),
    FlagReason.TYPO: N_("typo"),
    FlagReason.OUTDATED: N_("outdated"),
}
# The commands' options where a platform shows them as fields (Discord).
WHERE_OPTION = CommandOption(
    "where",
    N_("here: new submissions appear in this channel (empty: list them privately)"),
    choices=("here",),
)
RETIRE_OPTIONS = (
    CommandOption(
        "id", N_("the question's id, as /quiz review or /quiz report shows it"), required=True
    ),
    CommandOption("undo", N_("undo: bring a retired question back (optional)"), choices=("undo",)),
)
DECIDED = {
    SubmissionState.APPROVED: N_("This question was already approved by {name}."),
    SubmissionState.REJECTED: N_("This question was already rejected by {name}."),
}


def submission_number(value: str) -> int | None:
    """A button's submission number; None for anything else (never a database error)."""
    if not value.isascii() or not value.isdigit() or len(value) > 18:
        return None
    return int(value)


def question_lines(question: Question, locale: Locale) -> list[str]:
    """A question as an admin reads it: prompt, choices (the right one marked),
    explanation, topic and difficulty, links."""
    text = question.text(locale)
    lines = [f"*{text.prompt}*"]
    for i, choice in enumerate(text.choices):
        mark = " ✅" if i == question.answer else ""
        lines.append(f"- {choice_letter(i)}: {choice}{mark}")
    lines.append(f"_{text.explanation}_")
    languages = "/".join(loc.value for loc in question.locales)
    lines.append(
        f"`{question.id}` · {question.topic} · {difficulty_stars(question.difficulty)} · "
        f"{languages}"
    )
    if question.references:
        lines.append(" · ".join(question.references))
    return lines


def card_lines(sub: TeamQuestion, locale: Locale, t: Translator) -> list[str]:
    by = sub.author.display if sub.author is not None else t("an import")
    return [
        t("*#{number}* from {name}:", number=sub.id, name=by),
        *question_lines(sub.question, locale),
    ]


def review_buttons(sub: TeamQuestion, t: Translator) -> tuple[Button, ...]:
    value = str(sub.id)
    return (
        Button(t("Approve #{number}", number=sub.id), APPROVE, 0, value, ButtonStyle.PRIMARY),
        Button(t("Reject #{number}", number=sub.id), REJECT, 0, value, ButtonStyle.DANGER),
    )


def decided_line(sub: TeamQuestion, t: Translator) -> str:
    name = sub.decided_by.display if sub.decided_by is not None else "?"
    if sub.state is SubmissionState.APPROVED:
        return t("Approved by {name}: it is in the team pack.", name=name)
    return t("Rejected by {name}: {reason}", name=name, reason=sub.reason)


def reasons_text(flagged: FlaggedQuestion, t: Translator) -> str:
    return ", ".join(
        f"{t(REASONS[r])} {n}" for r, n in sorted(flagged.reasons.items(), key=lambda kv: -kv[1])
    )


class Review:
    """The review use cases of one bot: cards, decisions, retirements."""

    def __init__(self, service: QuizService, team: TeamPackRepository) -> None:
        self.service = service
        self.team = team
        self.problems = ThrottledLog(log)

    # -- cards in the review channel ---------------------------------------------------

    async def announce(self, sub: TeamQuestion) -> None:
        """Post a new submission in the workspace's review channel, if it has one. A
        failure is logged: the submission waits in `/quiz review` all the same."""
        channel = await self.team.review_channel(sub.workspace)
        if channel is None:
            return
        try:
            locale = await self.service.locale_for(channel)
            t = translator(locale)
            message = Message(
                title=t("A question for review"),
                body="\n".join(card_lines(sub, locale, t)),
                buttons=review_buttons(sub, t),
            )
            ref = await self.service.chat(channel).post_message(channel, message)
            await self.team.set_review_message(sub.id, ref)
        except Exception as exc:
            self.problems.problem(
                f"review card {type(exc).__name__}",
                "could not post question #%s in the review channel %s",
                sub.id,
                channel.key,
                exc=exc,
            )

    async def decided(self, sub: TeamQuestion) -> None:
        """After a decision: the card loses its buttons; the author is told privately."""
        if sub.review_message is not None:
            channel = sub.review_message.channel
            locale = await self.service.locale_for(channel)
            t = translator(locale)
            card = Message(
                title=t("Question #{number}", number=sub.id),
                body="\n".join([*card_lines(sub, locale, t), "", decided_line(sub, t)]),
            )
            await self._quietly(
                "review card update",
                self.service.chat(channel).update_message(sub.review_message, card),
            )
        if sub.author is not None and sub.channel is not None:
            t = translator(await self.service.locale_for(sub.channel))
            prompt = cut(sub.question.text(Locale.EN).prompt)
            admin = sub.decided_by.display if sub.decided_by is not None else "?"
            if sub.state is SubmissionState.APPROVED:
                body = t(
                    "Your question “{prompt}” was approved by {name}: it joins the team pack "
                    "and may be asked in any channel that takes it.",
                    prompt=prompt,
                    name=admin,
                )
            else:
                body = t(
                    "Your question “{prompt}” was not accepted by {name}. Reason: {reason}",
                    prompt=prompt,
                    name=admin,
                    reason=sub.reason,
                )
            await self._quietly(
                "author notice",
                self.service.chat(sub.channel).send_private(
                    sub.channel, sub.author, Message(body=body)
                ),
            )

    async def _quietly(self, what: str, work: Awaitable[object]) -> None:
        try:
            await work
        except Exception as exc:
            self.problems.problem(f"{what} {type(exc).__name__}", "%s failed", what, exc=exc)

    # -- decisions -------------------------------------------------------------------

    async def decide(
        self,
        click: Click | Submission,
        value: str,
        state: SubmissionState,
        locale: Locale,
        reason: str = "",
    ) -> Message:
        t = translator(locale)
        number = submission_number(value)
        if number is None:
            return Message(body=t(NOT_AVAILABLE))
        won, sub = await self.team.decide(
            number,
            Workspace.of(click.channel),
            state,
            click.user,
            self.service.clock.now(),
            reason,
        )
        if sub is None:
            return Message(body=t(NOT_AVAILABLE))
        if not won:
            name = sub.decided_by.display if sub.decided_by is not None else "?"
            if sub.state is SubmissionState.PENDING:  # not decided: the update lost a race
                return Message(body=t(NOT_AVAILABLE))
            return Message(body=t(DECIDED[sub.state], name=name))
        await self.decided(sub)
        if state is SubmissionState.APPROVED:
            return Message(
                body=t(
                    "Approved: question #{number} ({id}) joins the team pack.",
                    number=sub.id,
                    id=sub.question.id,
                )
            )
        return Message(
            body=t("Rejected question #{number}; its author is told why.", number=sub.id)
        )

    async def approve(self, click: Click, locale: Locale) -> Message:
        return await self.decide(click, click.value, SubmissionState.APPROVED, locale)

    async def open_reject(self, click: Click, locale: Locale) -> Form | Message:
        t = translator(locale)
        number = submission_number(click.value)
        sub = await self.team.get(number) if number is not None else None
        if sub is None or sub.workspace != Workspace.of(click.channel):
            return Message(body=t(NOT_AVAILABLE))
        if sub.state is not SubmissionState.PENDING:
            name = sub.decided_by.display if sub.decided_by is not None else "?"
            return Message(body=t(DECIDED[sub.state], name=name))
        field = FormField(
            REASON,
            t("Reason (the author sees it)"),
            FieldKind.PARAGRAPH,
            max_length=300,
            placeholder=t("e.g. the answer depends on the driver version"),
        )
        return Form(
            REJECT_FORM, 0, str(sub.id), t("Reject the question"), (field,), submit=t("Reject")
        )

    async def reject(self, sub: Submission, locale: Locale) -> SubmitReply:
        reason = " ".join(sub.values.get(REASON, "").split())[:300]
        if not reason:
            t = translator(locale)
            return SubmitReply(errors={REASON: t("Write a reason: the author sees it.")})
        return SubmitReply(
            await self.decide(sub, sub.value, SubmissionState.REJECTED, locale, reason)
        )

    async def retire_click(self, click: Click, locale: Locale) -> Message:
        return await self.retire(Workspace.of(click.channel), click.value, click, locale)

    async def retire(
        self, workspace: Workspace, question_id: str, who: Click | Invocation, locale: Locale
    ) -> Message:
        t = translator(locale)
        if await self.team.retire(workspace, question_id, who.user, self.service.clock.now()):
            return Message(
                body=t(
                    "Retired {id}: it is never asked again in this workspace (posts that asked "
                    "it keep it). Undo: /quiz retire {id} undo",
                    id=question_id,
                )
            )
        return Message(body=t("{id} is already retired in this workspace.", id=question_id))

    # -- commands --------------------------------------------------------------------

    async def review_command(
        self, service: QuizService, inv: Invocation, args: list[str]
    ) -> list[Reply]:
        t = translator(inv.locale)
        workspace = Workspace.of(inv.channel)
        if args and args[0].lower() == "here":
            await self.team.set_review_channel(inv.channel)
            return [
                Reply(
                    Message(
                        body=t(
                            "New submissions will appear in this channel, with Approve and "
                            "Reject buttons for admins."
                        )
                    ),
                    private=False,
                )
            ]
        if args:
            raise UserFacingError(
                t(
                    "Unknown option {value!r}: use /quiz review, or /quiz review here.",
                    value=cut(args[0], 20),
                )
            )
        pending = await self.team.listing(workspace, SubmissionState.PENDING, limit=SHOWN + 1)
        flagged = await self.team.flagged(workspace, limit=SHOWN)
        return [
            Reply(self._pending(pending, inv.locale)),
            Reply(await self._flagged(flagged, inv.locale)),
        ]

    def _pending(self, pending: list[TeamQuestion], locale: Locale) -> Message:
        t = translator(locale)
        if not pending:
            return Message(body=t("No question is waiting for review."))
        lines: list[str] = []
        buttons: list[Button] = []
        for sub in pending[:SHOWN]:
            lines += [*card_lines(sub, locale, t), ""]
            buttons += review_buttons(sub, t)
        footer = t("The oldest {count} are shown.", count=SHOWN) if len(pending) > SHOWN else ""
        return Message(
            title=t("Waiting for review"),
            body="\n".join(lines).strip(),
            buttons=tuple(buttons),
            footer=footer,
        )

    async def _flagged(self, flagged: list[FlaggedQuestion], locale: Locale) -> Message:
        t = translator(locale)
        if not flagged:
            return Message(body=t("No question has been reported."))
        lines: list[str] = []
        buttons: list[Button] = []
        for f in flagged:
            question = await self.service.store.questions.get(f.question_hash)
            prompt = cut(question.text(locale).prompt) if question is not None else ""
            line = t.n(
                "*{id}* — {count} report ({reasons}): “{prompt}”",
                "*{id}* — {count} reports ({reasons}): “{prompt}”",
                f.count,
                id=f.question_id,
                reasons=reasons_text(f, t),
                prompt=prompt,
            )
            if f.latest_note:
                line += " — " + t("latest note: “{note}”", note=cut(f.latest_note))
            if f.retired:
                line += " " + t("(retired)")
            elif len(f.question_id) <= 64:
                buttons.append(
                    Button(
                        t("Retire {id}", id=cut(f.question_id, 40)),
                        RETIRE,
                        0,
                        f.question_id,
                        ButtonStyle.DANGER,
                    )
                )
            lines.append(f"- {line}")
        return Message(title=t("Reported questions"), body="\n".join(lines), buttons=tuple(buttons))

    async def retire_command(
        self, service: QuizService, inv: Invocation, args: list[str]
    ) -> list[Reply]:
        t = translator(inv.locale)
        workspace = Workspace.of(inv.channel)
        qid = args[0].lower() if args else ""
        undo = len(args) > 1 and args[1].lower() == "undo"
        state = await service.pools.state(workspace)
        known = (
            qid in service.bank or qid in state.retired or any(q.id == qid for q in state.approved)
        )
        if not _ID.fullmatch(qid) or not known:
            raise UserFacingError(
                t(
                    "Unknown question id {value!r}: copy it from /quiz review or from "
                    "quizbot questions list, e.g. /quiz retire {example}",
                    value=cut(qid, 40),
                    example=service.bank.in_id_order()[0].id if len(service.bank) else "team-…",
                )
            )
        if not undo:
            return [Reply(await self.retire(workspace, qid, inv, inv.locale))]
        if await self.team.restore(workspace, qid):
            return [Reply(Message(body=t("{id} is back: it may be asked again.", id=qid)))]
        return [Reply(Message(body=t("{id} was not retired.", id=qid)))]


def feature(parts: Parts) -> Feature:
    review = Review(parts.service, parts.store.team)
    return Feature(
        "review",
        commands=[
            Command(
                "review",
                review.review_command,
                "review [here]",
                N_("approve or reject submitted questions, see reported ones (admins)"),
                Admin.ALWAYS,
                options=(WHERE_OPTION,),
            ),
            Command(
                "retire",
                review.retire_command,
                "retire <question id> [undo]",
                N_("never ask a question again in this workspace (admins)"),
                Admin.ALWAYS,
                options=RETIRE_OPTIONS,
            ),
        ],
        buttons=[
            ButtonKind(APPROVE, click=review.approve, admin="review", about_post=False),
            ButtonKind(RETIRE, click=review.retire_click, admin="review", about_post=False),
            ButtonKind(REJECT, form=review.open_reject, admin="review", about_post=False),
        ],
        forms=[FormKind(REJECT_FORM, review.reject, admin="review")],
    )


__all__ = ["APPROVE", "REASONS", "REJECT", "RETIRE", "Review", "feature", "question_lines"]
