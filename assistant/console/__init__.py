"""The master board console: a live web page for the caller's desk and a flashboard for the players."""

from .actions import ConsoleInputError
from .app import create_app, make_server, serve
from .hub import ConsoleHub
from .records import store_winners
from .view import ConsoleView, WinnerEntry

__all__ = [
    "ConsoleHub",
    "ConsoleInputError",
    "ConsoleView",
    "WinnerEntry",
    "create_app",
    "make_server",
    "serve",
    "store_winners",
]
