"""A user's optimizer chain under guard: an exception raised by the user's own code at any step of a run (after the
probe's two steps passed, `userprobe`) becomes one IbverifyError line naming the file and the step, never a
traceback. Only the user's transforms are wrapped: the library's own (logframe.EMA, Sign, …) keep their exact
types, so a block chain the compiled engine recognises still runs compiled."""

from __future__ import annotations

from ..errors import IbverifyError


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
    """The vector transforms (`transforms.Transform`, the protocol's init/update) with the user's exceptions as
    UserChainError (the step counted by the guard, 1-based)."""
    from .transforms import Transform

    def wrap(tr):
        def init(params):
            try:
                return 0, tr.init(params)
            except IbverifyError:
                raise
            except Exception as e:
                _raise(source, "vector", None, e)

        def update(u, state, params=None, **extra):
            t, inner = state
            try:
                u, inner = tr.update(u, inner, params, **extra)
            except IbverifyError:
                raise
            except Exception as e:
                _raise(source, "vector", t + 1, e)
            return u, (t + 1, inner)

        return Transform(init, update)

    return [wrap(tr) for tr in ts]


def guard_block(ts: list, source: str) -> list:
    """The log-frame transforms with the user's own (a class not of ibverify) wrapped (the step counted by the
    guard, 1-based)."""
    from . import logframe as F

    class Guarded(F.Transform):
        def __init__(self, inner):
            self.inner = inner

        def init(self, params):
            try:
                return 0, self.inner.init(params)
            except IbverifyError:
                raise
            except Exception as e:
                _raise(source, "block", None, e)

        def update(self, x, state, params=None, **extra):
            t, inner = state
            try:
                x, inner = self.inner.update(x, inner, params, **extra)
            except IbverifyError:
                raise
            except Exception as e:
                _raise(source, "block", t + 1, e)
            return x, (t + 1, inner)

    def users(t_) -> bool:   # the user's own class, or an old-protocol one adapted (logframe._Legacy)
        return isinstance(t_, F._Legacy) or not type(t_).__module__.startswith("ibverify.")

    return [Guarded(t_) if users(t_) else t_ for t_ in ts]
