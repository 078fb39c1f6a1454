"""`/quiz packs`: which questions a channel gets — the built-in bank, the workspace's team
pack, generated questions — shown to anyone, changed by admins:
`/quiz packs builtin|team on|off`, `/quiz packs generated on|off|0-100`.

Generated questions keep their share (`/quiz generated 0-100` says the same thing):
`off` is a share of 0, `on` restores the default share when it was 0. `/quiz ask team`
asks from the team pack whatever the mix.
"""

from __future__ import annotations

from dataclasses import replace

from bot.commands import Admin, Command, CommandOption, Invocation, Reply
from bot.domain import DEFAULT_GENERATED_SHARE, ChannelSettings
from bot.errors import UserFacingError
from bot.features import Feature, Parts
from bot.i18n import N_, Translator, translator
from bot.messages import Message
from bot.quiz import QuizService
from bot.quoting import cut
from bot.team import Workspace

USAGE = "packs [builtin|team|generated on|off]"
_SWITCH = {"on": True, "off": False}
# As fields (Discord): the pack, then its setting — on/off offered as the member types, a
# share of generated questions typed as a number.
PACKS_OPTIONS = (
    CommandOption(
        "pack",
        N_("builtin, team or generated (empty: show this channel's mix)"),
        choices=("builtin", "team", "generated"),
    ),
    CommandOption(
        "value",
        N_("on or off; for generated also a share, 0 to 100"),
        suggest=lambda service: list(_SWITCH),
    ),
)


def _state(on: bool, t: Translator) -> str:
    return t("on") if on else t("off")


async def _team_count(service: QuizService, settings: ChannelSettings) -> int:
    state = await service.pools.state(Workspace.of(settings.channel))
    return len([q for q in state.approved if q.id not in state.retired])


async def packs_message(service: QuizService, settings: ChannelSettings, t: Translator) -> Message:
    team = await _team_count(service, settings)
    lines = [
        t(
            "Built-in questions: {state} ({count})",
            state=_state(settings.builtin_pack, t),
            count=len(service.bank),
        ),
        t("Team pack: {state} ({count} approved)", state=_state(settings.team_pack, t), count=team),
    ]
    if service.generated is not None:
        lines.append(t("Generated questions: {share}% of picks", share=settings.generated_share))
    lines += [
        "",
        t(
            "Change it (admins): /quiz packs builtin on|off, /quiz packs team on|off, "
            "/quiz packs generated on|off|0-100. Ask from the team pack now: /quiz ask team"
        ),
    ]
    return Message(title=t("Question packs in this channel"), body="\n".join(lines))


async def packs_command(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
    t = translator(inv.locale)
    settings = await service.store.settings.get(inv.channel)
    if not args:
        return [Reply(await packs_message(service, settings, t))]
    pack = args[0].lower()
    value = args[1].lower().rstrip("%") if len(args) > 1 else ""
    if pack in ("builtin", "team") and value in _SWITCH:
        on = _SWITCH[value]
        if pack == "builtin":
            changed = replace(settings, builtin_pack=on)
        else:
            changed = replace(settings, team_pack=on)
    elif (
        pack == "generated"
        and service.generated is not None
        and (value in _SWITCH or (value.isascii() and value.isdigit() and int(value) <= 100))
    ):
        share = int(value) if value.isdigit() else 0
        if value == "on":
            share = settings.generated_share or DEFAULT_GENERATED_SHARE
        changed = replace(settings, generated_share=share)
    else:
        raise UserFacingError(
            t(
                "{value!r} is not a pack setting: use builtin on|off, team on|off or "
                "generated on|off|0-100. Example: /quiz packs team on",
                value=cut(" ".join(args), 40),
            )
        )
    generated = service.generated is not None and changed.generated_share > 0
    team = changed.team_pack and await _team_count(service, changed) > 0
    if not ((changed.builtin_pack and len(service.bank)) or team or generated):
        raise UserFacingError(
            t(
                "That would leave this channel without questions: keep at least one pack "
                "with questions on (e.g. /quiz packs builtin on)."
            )
        )
    await service.store.settings.save(changed)
    return [Reply(await packs_message(service, changed, t), private=False)]


def feature(parts: Parts) -> Feature:
    return Feature(
        "packs",
        commands=[
            Command(
                "packs",
                packs_command,
                USAGE,
                N_("show or set which question packs this channel gets"),
                Admin.TO_CHANGE,
                options=PACKS_OPTIONS,
            )
        ],
    )


__all__ = ["feature", "packs_command"]
