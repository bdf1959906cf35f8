"""Where the product's data is: the checkout's top-level folders, or their copy in an installed wheel."""

from __future__ import annotations

from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent
ROOT = _CHECKOUT if (_CHECKOUT / "config" / "default.toml").is_file() else Path(__file__).resolve().parent / "bundled"
"""Where the defaults, the grammar, the rule pack and the demo's recordings are: the checkout's top-level folders, or
their copy in an installed wheel (`assistant/bundled/`). Relative paths in the defaults are relative to it."""
