"""The master board console: a live web page for the caller's desk and a flashboard for the players."""

from .access import Access, RecordUsers, hash_password
from .actions import ConsoleInputError
from .app import BindError, bind, create_app, make_server, serve
from .hub import ConsoleHub, HubClosed
from .records import journal_access, store_winners
from .view import ConsoleView, WinnerEntry

__all__ = [
    "Access",
    "BindError",
    "ConsoleHub",
    "ConsoleInputError",
    "ConsoleView",
    "HubClosed",
    "RecordUsers",
    "WinnerEntry",
    "bind",
    "create_app",
    "hash_password",
    "journal_access",
    "make_server",
    "serve",
    "store_winners",
]
