"""Hypothesis profiles: `ci` (derandomized, no database: every run identical) and `dev` (random).

Selected by $HYPOTHESIS_PROFILE (default `ci`); the CLI and the pytest plugin both load it.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=False)
settings.register_profile("dev", derandomize=False, deadline=None)


def load(name: str | None = None) -> str:
    name = name or os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(name)
    return name
