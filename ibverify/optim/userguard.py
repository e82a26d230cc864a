"""A user's optimizer chain under guard: an exception raised by the user's own code at any step of a run (after the
probe's two steps passed, `userprobe`) becomes one IbverifyError line naming the file and the step, never a
traceback. Only the user's transforms are wrapped: the library's own (logframe.EMA, Sign, …) keep their exact
types, so a block chain the compiled engine recognises still runs compiled."""

from __future__ import annotations

from .. import IbverifyError


class UserChainError(IbverifyError):
    """The user's chain raised during a run; `detail` is the exception as 'Type: message'."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail or message


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _raise(source: str, which: str, step: int | None, e: Exception):
    detail = _one_line(e)
    at = f" at step {step}" if step is not None else " at its init"
    raise UserChainError(f"--optimizer {source}: its {which} chain raised{at}: {detail}", detail) from None


def guard_vector(ts: list, source: str) -> list:
    """The vector transforms (`transforms.Transform`) with the user's exceptions as UserChainError (t is 0-based)."""
    from .transforms import Transform

    def wrap(tr):
        def init(d):
            try:
                return tr.init(d)
            except IbverifyError:
                raise
            except Exception as e:
                _raise(source, "vector", None, e)

        def update(u, grad, state, t):
            try:
                return tr.update(u, grad, state, t)
            except IbverifyError:
                raise
            except Exception as e:
                _raise(source, "vector", int(t) + 1, e)

        return Transform(init, update)

    return [wrap(tr) for tr in ts]


def guard_block(ts: list, source: str) -> list:
    """The log-frame transforms with the user's own (a class not of ibverify) wrapped (t is 1-based)."""
    from . import logframe as F

    class Guarded(F.Transform):
        def __init__(self, inner):
            self.inner = inner
            self.needs_params = getattr(inner, "needs_params", False)

        def init(self, params):
            try:
                return self.inner.init(params)
            except IbverifyError:
                raise
            except Exception as e:
                _raise(source, "block", None, e)

        def update(self, x, state, t, ctr, *params):
            try:
                return self.inner.update(x, state, t, ctr, *params)
            except IbverifyError:
                raise
            except Exception as e:
                _raise(source, "block", int(t), e)

    return [tr if type(tr).__module__.startswith("ibverify.") else Guarded(tr) for tr in ts]
