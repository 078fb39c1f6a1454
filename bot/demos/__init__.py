"""GPU memory demonstrations from the bot's side: runs (`runs`), the dispatcher that drives
them to the thread (`dispatcher`), their lines in the thread (`messages`), and the
commands and button (`commands`)."""

from bot.demos.commands import install_demos, parse_params, register_demo_commands
from bot.demos.dispatcher import DemoDispatcher, SchedulePolicy
from bot.demos.messages import result_message, status_message
from bot.demos.runs import DemoCatalog, DemoRun, DemoRunRepository, TrackingRunner

__all__ = [
    "DemoCatalog",
    "DemoDispatcher",
    "DemoRun",
    "DemoRunRepository",
    "SchedulePolicy",
    "TrackingRunner",
    "install_demos",
    "parse_params",
    "register_demo_commands",
    "result_message",
    "status_message",
]
