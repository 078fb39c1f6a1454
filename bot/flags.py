"""Flags: "Report a problem" under every public reveal opens a form — the reason (wrong
answer, ambiguous, typo, outdated; a number or a word, since a form field is plain text
on every platform) and an optional note. Admins see the counts in `/quiz review` and in
`quizbot report`, and retire a question from there (`bot.review`)."""

from __future__ import annotations

from bot.domain import ChannelRef, Locale, PostKind, Reveal
from bot.features import ButtonKind, Feature, FormKind, Parts
from bot.forms import FieldKind, Form, FormField, Submission, SubmitReply
from bot.i18n import translator
from bot.interactions import NOT_AVAILABLE, Click
from bot.messages import Button, Message
from bot.quoting import cut
from bot.review import REASONS
from bot.team import FlagReason

FORM_KIND = "flag"
REASON, NOTE = "reason", "note"
NOTE_MAX = 500
# What a member may type for each reason: its number, its key, its words in each language.
ORDER = (FlagReason.WRONG_ANSWER, FlagReason.AMBIGUOUS, FlagReason.TYPO, FlagReason.OUTDATED)


def parse_reason(text: str) -> FlagReason | None:
    word = " ".join(text.strip().lower().rstrip(".").split())
    if word.isascii() and word.isdigit() and 1 <= int(word) <= len(ORDER):
        return ORDER[int(word) - 1]
    for reason in ORDER:
        names = {reason.value, reason.value.replace("-", " ")}
        names |= {translator(loc)(REASONS[reason]).lower() for loc in Locale}
        if word in names or (word and any(n.split()[0] == word for n in names)):
            return reason
    return None


def _same_workspace(post: ChannelRef, where: ChannelRef) -> bool:
    """The reveal may sit in a thread (a channel of its own on Discord): a report is taken
    from anywhere in the post's workspace, and from nowhere else."""
    return (post.platform, post.workspace) == (where.platform, where.workspace)


def reason_choices(locale: Locale) -> str:
    t = translator(locale)
    return " · ".join(f"{i} {t(REASONS[r])}" for i, r in enumerate(ORDER, 1))


FLAG = "flag"  # the reveal's "Report a problem": opens the form


def feature(parts: Parts) -> Feature:
    service, team = parts.service, parts.store.team

    def report_button(reveal: Reveal, locale: Locale) -> Button | None:
        if reveal.post.kind is PostKind.PRACTICE:
            return None
        t = translator(locale)
        return Button(t("Report a problem"), FLAG, reveal.post.id, "")

    async def open_flag(click: Click, locale: Locale) -> Form | Message:
        t = translator(locale)
        post = await service.store.posts.get(click.post_id)
        if post is None or not _same_workspace(post.channel, click.channel):
            return Message(body=t(NOT_AVAILABLE))
        fields = (
            FormField(
                REASON,
                t("Reason: a number or a word"),
                max_length=40,
                placeholder=reason_choices(locale),
            ),
            FormField(
                NOTE,
                t("Note (optional)"),
                FieldKind.PARAGRAPH,
                required=False,
                max_length=NOTE_MAX,
                placeholder=t("What is wrong, and the source if you have one"),
            ),
        )
        return Form(FORM_KIND, post.id, "", t("Report a problem"), fields, submit=t("Send"))

    async def submit_flag(sub: Submission, locale: Locale) -> SubmitReply:
        t = translator(locale)
        typed = sub.values.get(REASON, "")
        reason = parse_reason(typed)
        if reason is None:
            return SubmitReply(
                errors={
                    REASON: t(
                        "{value!r} is not a reason: type 1 (wrong answer), 2 (ambiguous), "
                        "3 (typo) or 4 (outdated).",
                        value=cut(typed.strip(), 20),
                    )
                }
            )
        post = await service.store.posts.get(sub.post_id)
        question = await service.store.questions.get(post.question_hash) if post else None
        if post is None or question is None or not _same_workspace(post.channel, sub.channel):
            return SubmitReply(Message(body=t(NOT_AVAILABLE)))
        note = sub.values.get(NOTE, "").strip()[:NOTE_MAX]
        if await team.flag(post, question, sub.user, reason, note, service.clock.now()):
            return SubmitReply(
                Message(
                    body=t("Thanks: the admins will look at this question ({id}).", id=question.id)
                )
            )
        return SubmitReply(Message(body=t("You already reported this question; thanks.")))

    return Feature(
        "flags",
        buttons=[ButtonKind(FLAG, form=open_flag)],
        forms=[FormKind(FORM_KIND, submit_flag)],
        reveal_buttons=[report_button],
    )


__all__ = ["FLAG", "FORM_KIND", "feature", "parse_reason", "reason_choices"]
