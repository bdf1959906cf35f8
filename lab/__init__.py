"""The lab: data made here, training, the benchmarks and the scenario bench. Not installed with the product.

Run from the repository root (`python -m lab.bench ...`, `python -m lab.scenarios ...`, `python -m lab.train ...`);
its extra dependencies are the `train` and `bench` extras of pyproject.toml.
"""

from __future__ import annotations

import os
from pathlib import Path

from assistant.settings import ROOT

REAL_AUDIO = Path(os.environ.get("BINGO_REAL_AUDIO", ROOT.parent / "shared" / "audio" / "real"))
"""Recorded human speech for tests and benchmarks: the shared folder beside the repository."""
