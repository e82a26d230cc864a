"""ibverify: numerical, repeatable verification of implicit-bias theorems for optimizers.

Data flow: dataset -> run -> evidence -> verdict -> report.

Python API (ibverify.api, docs/python-api.md; loaded on first use): ibverify.bias, ibverify.verify, ibverify.train,
and ibverify.UserOptimizer for an optimizer made in a session.
"""

from .errors import IbverifyError  # noqa: F401  (the public error)
from .version import __version__  # noqa: F401


# The Python API (ibverify.api, docs/python-api.md), loaded on first use so that `import ibverify` stays light
# (importlib: a lazy import, not one of the package's static imports).
_API = ("bias", "verify", "train", "BiasResult", "VerifyResult", "TrainResult")


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module("ibverify.api"), name)
    if name == "UserOptimizer":
        import importlib

        return importlib.import_module("ibverify.optim.userfile").UserOptimizer
    raise AttributeError(f"module 'ibverify' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API, "UserOptimizer"])
