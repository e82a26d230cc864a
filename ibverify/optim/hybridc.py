"""The c at which `ibverify bias` judges a run in the hybrid geometry max{c·‖W‖_msp, ‖u‖_∞} (issue 51 item 5).

Steepest descent of the hybrid norm steps θ ← θ + η·LMO(g) with LMO(g) = (−polar(G_k)/c on each matrix block,
−sign(g_u) on the vectors) (geometry.hybrid): the vectors move η per coordinate, each matrix η/c along its polar
factor. A Muon–partner pair that moves a matrix block by η_M'·polar(G) (η_M' its step *after* any shape adjustment
of the library) and the vectors by η_A·sign(g) is that descent with η = η_A and c = η_A/η_M'. So a library whose
Muon multiplies its step by a(A, B) for a block of shape (A, B), both groups at one η_t, implies c = 1/a(A, B):
torch's default √max(1, A/B) gives c = 1/√max(1, A/B) (c = 1 where A ≤ B; c < 1 for a tall block). Where the blocks'
c differ, no single c exists: the hybrid is not judged (`single`), never judged at c = 1 in its stead.

`implied(spec, shapes)`: a torch or optax optimizer's chains say their own (`hybrid_c(spec, shapes)`:
optim.torchblock, optim.optaxadapt; None: not a Muon pair); a hybrid row of the table its lr_vector/lr_matrix (no
shape adjustment: its Muon step is −polar(G)); any other optimizer the norm's c = 1 (none implied).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

SAME = 1e-12   # blocks' c equal to this relative difference are one c


class ImpliedC(NamedTuple):
    """The c judged (None: the hybrid is not judged) and where it comes from, or why there is none."""
    value: float | None
    source: str

    def to_json(self) -> dict:
        return {"c": self.value, "source": self.source}


def _shape(s) -> str:
    return "×".join(str(int(n)) for n in s)


def single(per_block: Mapping[str, tuple[tuple, float]], rule: str, note: str = "") -> ImpliedC:
    """One c from each matrix block's {name: (shape, c)} under `rule` (how c follows from a block's shape): their
    common value, or None where they differ (no single c of the hybrid norm), each block's stated."""
    if not per_block:
        return ImpliedC(None, "no 2-D block: the hybrid norm needs one")
    cs = [c for _, c in per_block.values()]
    each = ", ".join(f"{k} ({_shape(s)}): c = {c:.4g}" for k, (s, c) in per_block.items())
    if max(cs) - min(cs) > SAME * max(cs):
        return ImpliedC(None, f"{rule} gives the matrix blocks different c ({each}): no single c of "
                              f"max{{c·‖W‖_msp, ‖u‖_∞}}, the hybrid is not judged")
    return ImpliedC(float(cs[0]), f"{rule}: {each}" + (f"; {note}" if note else ""))


def implied(spec, shapes: Mapping[str, tuple]) -> ImpliedC:
    """The c a run of `spec` (resolved for the block model) on a model with these block shapes is judged at (module
    docstring)."""
    chains = getattr(spec.user, "user", None) if spec.user is not None else None
    own = getattr(chains, "hybrid_c", None)
    found = own(spec, shapes) if callable(own) else None
    if found is not None:
        return found
    if spec.user is None and spec.row.geometry == "hybrid":
        lv, lm = float(spec.lr_vector), float(spec.lr_matrix)
        return ImpliedC(lv / lm, f"{spec.name}: η_vector/η_matrix = lr_vector/lr_matrix = {lv:g}/{lm:g} (its Muon "
                                 f"step is −polar(G), no shape adjustment)")
    return ImpliedC(1.0, f"none implied ({spec.name} is no Muon–partner pair): the norm's c = 1")


__all__ = ["ImpliedC", "implied", "single"]
