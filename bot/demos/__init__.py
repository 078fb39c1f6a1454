"""GPU memory demonstrations from the bot's side: runs (`runs`), the dispatcher that drives
them to the thread (`dispatcher`), their lines in the thread (`messages`), and the
commands and button (`commands`)."""

from bot.demos.commands import demo_commands, demo_feature, feature, parse_params
from bot.demos.dispatcher import DEMO, DemoDispatcher, SchedulePolicy
from bot.demos.messages import result_message, status_message
from bot.demos.runs import DemoCatalog, DemoRun, DemoRunRepository, TrackingRunner

__all__ = [
    "DEMO",
    "DemoCatalog",
    "DemoDispatcher",
    "DemoRun",
    "DemoRunRepository",
    "SchedulePolicy",
    "TrackingRunner",
    "demo_commands",
    "demo_feature",
    "feature",
    "parse_params",
    "result_message",
    "status_message",
]
