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

    return [wrap(tr) for tr in ts] + [set_aside(source)]


def zero_by_zero_fix(k: int) -> str:
    """The way forward a genuine 0/0 refusal names (a step NaN where coordinate k's gradient is 0: an ε = 0
    preconditioner dividing a zero moment by its zero root)."""
    return (f"; the way forward: a positive ε (e.g. eps=1e-8 in the optimizer's name or --eps), or coordinate {k} "
            f"set aside yourself (its column, 0-based, removed from the data file)")


def set_aside(source: str):
    """The last transform of a foreign vector chain (a user's file, torch:, optax:): the data's zero columns set aside,
    as the table's optimizers and docs/own-data.md have them. A coordinate that no sample seen so far has (every
    per-sample gradient 0 there; with a full batch, from step 1 on: the columns zero in every sample) is not moved:
    whatever the chain makes there (Adam at ε = 0: 0/0 = NaN) is replaced by 0, so the iterate keeps its initial
    value. A coordinate the chain moved (or made NaN) while it was set aside, and which a later batch shows is not zero
    in every sample, is an error line naming its first such step; so is a NaN step in a coordinate of zero gradient
    that samples have: "non-finite iterate by step t: 0/0 in coordinate k at step t" (the engine's words first, which
    runner.underflow reads). Without `per_sample` (the batch's per-sample gradients) nothing is set aside."""
    import numpy as np

    from .transforms import Transform

    def init(params):
        return 0, None, None   # step, seen (bool per coordinate), first step set aside by coordinate

    def update(u, state, params=None, *, per_sample=None, **extra):
        t, seen, held = state
        t += 1
        if per_sample is None:
            return u, (t, seen, held)
        try:
            G = np.asarray(per_sample, dtype=np.float64)
            out = np.asarray(u)
            x = out.astype(np.float64)
        except (TypeError, ValueError):   # not an array of numbers: left as it is
            return u, (t, seen, held)
        if G.ndim != 2 or x.shape != G.shape[1:]:
            return u, (t, seen, held)
        now = np.any(G != 0, axis=0)
        seen = now if seen is None else seen | now
        held = np.zeros(x.shape, dtype=np.int64) if held is None else held
        late = np.flatnonzero(now & (held != 0))
        if len(late):
            k = int(late[0])
            s = int(abs(held[k]))
            why = (f"set aside until step {t}, when a batch is nonzero there: it is not zero in every sample (the "
                   f"data's zero columns alone are set aside; a full batch finds them at step 1)")
            if held[k] > 0:
                raise IbverifyError(f"{source}: non-finite iterate by step {s}: 0/0 in coordinate {k} at step {s}, "
                                    f"while every sample seen so far was 0 there; {why}" + zero_by_zero_fix(k))
            raise IbverifyError(f"{source}: the optimizer moved coordinate {k} at step {s} while every sample seen "
                                f"so far was 0 there (its gradient 0); {why}")
        nan0 = np.flatnonzero(seen & np.isnan(x) & (G.sum(axis=0) == 0))
        if len(nan0):
            k = int(nan0[0])
            raise IbverifyError(f"{source}: non-finite iterate by step {t}: 0/0 in coordinate {k} at step {t} (its "
                                f"step is NaN where its gradient is 0; the coordinate is not zero in every sample, so "
                                f"it is not set aside)" + zero_by_zero_fix(k))
        moved = ~seen & (x != 0)   # NaN != 0 too
        if moved.any():
            first = moved & (held == 0)
            held = np.where(first, np.where(np.isfinite(x), -t, t), held)   # t: NaN or inf, −t: a finite step
            out = out.copy()
            out[moved] = 0
        return out, (t, seen, held)

    return Transform(init, update)


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
