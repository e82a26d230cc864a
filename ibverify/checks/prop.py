"""Running a hypothesis property inside a check, keeping every example's evidence.

`run_property(ctx, strategy, evaluate)` calls `evaluate(example) -> Example` on generated
examples. Each example carries a decision (rules.py): supported, contradicted, inconclusive (or set aside,
outside the claim's hypotheses); the property fails only on a contradicted example (`example.ok` is "not
contradicted"), so an example that has not yet shown its limit never refutes a claim. It returns all
evaluated examples, the contradicted one (hypothesis replays the shrunk counterexample last) and the claim-level
tally (rules.tally: holds needs ≥ `min_supported` supported examples, default two thirds of those judged).
Examples the check sets aside (outside its hypotheses) make hypothesis draw others, up to `set_aside_cap`.
`sequential(judge_at, steps, cap)` extends an inconclusive example ×10 up to the tier's cap; each example
records the horizon that decided it, and `run_property` collects them (ctx.horizons → the row's outcome.horizons).
Settings come from the
active hypothesis
profile (`ci`: seeded from the claim id and ctx.seed, so every run is identical; `dev`: random) and the
tier's `examples` / `shrink` parameters.

Resume: when `ctx.cache` is set (full tier by default, `ibverify verify --resume`), every evaluated
Example is stored there under its index and the fingerprint of the drawn example (ibverify.cache);
a re-run draws the same examples (same seed) and reuses the stored ones instead of evaluating them,
so a killed run continues at the first example it had not finished.

Examples as tasks (on Dask only): the examples are drawn once without evaluating them, evaluated in
parallel as tasks, and the property then runs on those values (ibverify.runner.distributed). Both the cache
and the tasks are used only for evaluations whose sole effect is their value (see run_property).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import hashlib
import time

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable

import math

from ..cache import fingerprint, state_fingerprint
from ..claims import CheckContext
from . import rules


@dataclass
class Example:
    ok: bool               # not contradicted (a decision word, when given, decides it)
    figures: dict[str, float]
    curves: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    reason: str = ""
    description: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    decision: str = ""     # rules.SUPPORTED | CONTRADICTED | INCONCLUSIVE | SET_ASIDE; "" = from ok
    decided_at: int | None = None  # the horizon (steps) at which it was decided

    def __post_init__(self):
        if self.decision:
            if self.decision not in rules.DECISIONS:
                raise ValueError(f"unknown decision {self.decision!r}")
            self.ok = self.decision != rules.CONTRADICTED

    @property
    def word(self) -> str:
        return self.decision or (rules.SUPPORTED if self.ok else rules.CONTRADICTED)


@dataclass
class PropertyResult:
    holds: bool            # no example contradicted and enough supported (see `undecided`)
    examples: list[Example]
    failing: Example | None
    undecided: str = ""    # non-empty: the claim is inconclusive (no contradiction, too few supported)
    counts: dict[str, int] = field(default_factory=dict)


def decide(examples: list[Example], min_supported: int | None = None, requested: int = 0,
           set_aside: int = 0) -> tuple[bool | None, str, dict[str, int]]:
    """rules.tally over the examples' decisions; min_supported defaults to ⌈2/3⌉ of the judged examples. With fewer
    than half of the `requested` examples inside the claim's hypotheses (judged), the claim cannot hold: inconclusive
    (a contradiction still decides). `set_aside`: examples outside the hypotheses that the check rejected itself
    (hypothesis drew others), counted."""
    words = [e.word for e in examples]
    judged = sum(w != rules.SET_ASIDE for w in words)
    k = math.ceil(2 * judged / 3) if min_supported is None else int(min_supported)
    verdict, text = rules.tally(words, k, set_aside)
    counts = {w: words.count(w) for w in rules.DECISIONS}
    counts[rules.SET_ASIDE] += set_aside
    if verdict is True and set_aside and judged < math.ceil(requested / 2):
        verdict, text = None, f"{text}: only {judged} of {requested} examples inside the claim's hypotheses"
    return verdict, text, counts


def first_on_grid(steps: int, first: float | None) -> int:
    """The first horizon: `steps`, or with `first` (a claim's first_horizon, from `sequential_from`) steps // 10^k
    for the largest k ≥ 0 that keeps it ≥ first, so the ×10 horizons end at (about) the tier's own."""
    T = int(steps)
    if first is None or first >= T:
        return T
    k = int(math.floor(math.log10(T / float(first)) + 1e-12))
    return T // 10 ** k


def sequential(judge_at: Callable[[int, bool], Example], steps: int, cap: int | None,
               first: int | None = None) -> Example:
    """judge_at(horizon, final) at steps, 10·steps, … while inconclusive and ≤ cap (None: steps); `final` is
    True at the largest horizon the example can reach. With `first` (the claim's first_horizon) the horizons start
    lower, at first_on_grid(steps, first): most examples decide there, as on the tier it names, and only the
    undecided ones go on to the cap. Engines are deterministic, so a longer run repeats the
    shorter one's steps bit-identically before going on; compiled network runs continue the shorter run instead of
    repeating it (recipes.RunStore.run). The example records the horizon that decided it."""
    cap = steps if cap is None else max(int(cap), steps)
    T = first_on_grid(steps, first)
    while True:
        final = T * 10 > cap
        ex = judge_at(T, final)
        if ex.word != rules.INCONCLUSIVE or final:
            ex.decided_at = T if ex.word != rules.INCONCLUSIVE else None
            ex.figures = {**ex.figures, "horizon": float(T)}
            return ex
        T *= 10


def record_horizons(ctx: CheckContext, examples: list[Example]) -> None:
    """Append to ctx.horizons, for each example judged at a horizon (by `sequential`, or a check that sets
    `decided_at` itself), its decision, the horizon that decided it (None: not decided, inconclusive at the largest
    horizon reached) and the largest horizon it was judged at. The results row carries them as outcome.horizons."""
    out = getattr(ctx, "horizons", None)
    if out is None:
        return
    for e in examples:
        reached = e.figures.get("horizon")
        if e.decided_at is None and reached is None:
            continue
        out.append({"decision": e.word, "horizon": None if e.decided_at is None else int(e.decided_at),
                    "reached": int(reached) if reached is not None else int(e.decided_at)})


def step_progress(ctx: CheckContext, label: str):
    """An engine progress callback (t, T) that reports steps and ETA through ctx.progress."""
    t0 = time.perf_counter()

    def report(t: int, total: int) -> None:
        el = time.perf_counter() - t0
        eta = el * (total - t) / t if t else float("nan")
        ctx.progress(f"{label}: step {t:.3g}/{total:.3g} ({t / total:.0%}), ETA {eta:.0f}s")

    return report


class _Counterexample(AssertionError):
    pass


class _SetAsideEnough(Exception):
    """set_aside_cap(requested) examples set aside: draw no more (each costs a whole run)."""


def set_aside_cap(requested: int) -> int:
    """How many examples outside the hypotheses a property draws before it stops drawing (decided by prop.decide:
    inconclusive with too few judged). Generous: at the measured set-aside rates (1 in 5 to 1 in 10 network
    examples) a property never reaches it; it only stops a run-away when (nearly) every draw is outside."""
    return max(10, 2 * requested)


# Test hook: called as after_example(index, fresh) after each example (fresh: evaluated, not reused
# from the cache); tests raise from it to interrupt a property at a chosen example.
after_example: Callable[[int, bool], None] | None = None


def _hypothesis_test(ctx: CheckContext, strategy, body: Callable[[Any], None]):
    """`body` as a hypothesis test over `strategy`, with the settings of the active profile and the tier."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    if ctx.params.get("shrink", False):
        phases.append(Phase.shrink)
    base = settings()  # the loaded profile

    test = settings(base, derandomize=False, max_examples=int(ctx.params.get("examples", 5)), deadline=None,
                    database=None, phases=phases, report_multiple_bugs=False, print_blob=False,
                    suppress_health_check=list(HealthCheck))(given(strategy)(body))
    if base.derandomize:  # `ci`: a stable seed from (claim id, ctx.seed); `dev`: random
        digest = hashlib.sha256(f"{ctx.claim.id}:{ctx.seed}".encode()).digest()
        test = seed(int.from_bytes(digest[:8], "big"))(test)
    return test


def _prefetch(ctx: CheckContext, strategy, evaluate, prop_key: str) -> dict[str, Example]:
    """Examples as tasks: evaluate, in parallel through ctx.map_examples, the examples the property will
    draw, keyed by their fingerprint. Under a derandomized profile a pass that only records the draws
    sees the same sequence as the real run as long as examples pass and `evaluate` rejects none
    (assume); any example the real run draws beyond that is simply evaluated there. The result never
    depends on the prefetch: it only replaces evaluate(x) by the same value computed elsewhere."""
    if ctx.map_examples is None or not settings().derandomize or int(ctx.params.get("examples", 5)) < 2:
        return {}
    drawn: list = []

    def record(example):
        drawn.append(example)

    _hypothesis_test(ctx, strategy, record)()
    todo = {}
    for i, ex in enumerate(drawn):
        if ctx.cache is None or ctx.cache.load_example(prop_key, i, ex) is None:
            todo.setdefault(fingerprint(ex), ex)
    if len(todo) < 2:
        return {}
    values = ctx.map_examples(evaluate, list(todo.values()))
    return {k: v for k, v in zip(todo, values, strict=True) if isinstance(v, Example)}


def _evaluate_here(evaluate, example, cache, key: str, index: int) -> Example:
    """evaluate(example), stored in the cache when the evaluation changed nothing else."""
    if cache is None:
        return evaluate(example)
    before = state_fingerprint(evaluate, example)
    r = evaluate(example)
    if before is not None and state_fingerprint(evaluate, example) == before:
        cache.store_example(key, index, example, r)
    return r


def run_property(ctx: CheckContext, strategy, evaluate: Callable[[Any], Example],
                 set_aside: list | None = None) -> PropertyResult:
    """The property `evaluate(x).ok` over `strategy` (see the module docstring). `set_aside`: the list evaluate
    appends an example to when it rejects it as outside the claim's hypotheses (counted in the tally).

    An evaluation's value is stored (cache) or computed elsewhere (examples as tasks) only when it was
    the evaluation's sole effect: the state evaluate's closure can reach (ibverify.cache.state_fingerprint)
    is the same before and after it. An evaluate that collects evidence on the side (appends to a list
    of the check) is simply evaluated here, every time."""
    seen: list[Example] = []
    cache = ctx.cache
    tag = f"{ctx.claim.id}:{ctx.seed}:{getattr(evaluate, '__qualname__', '')}"
    key = cache.new_property(tag) if cache is not None else ""
    ready = _prefetch(ctx, strategy, evaluate, key)

    requested = int(ctx.params.get("examples", 5))

    def prop(example):
        if set_aside is not None and len(set_aside) >= set_aside_cap(requested):
            raise _SetAsideEnough
        index = len(seen)
        r = cache.load_example(key, index, example) if cache is not None else None
        fresh = r is None
        if fresh:
            if ready:
                r = ready.get(fingerprint(example))
            if r is None:
                r = _evaluate_here(evaluate, example, cache, key, index)
                ctx.on_example()
            elif cache is not None:
                cache.store_example(key, index, example, r)
        else:
            ctx.on_example()
        seen.append(r)
        ctx.progress(f"example {len(seen)}: {r.word if r.ok else 'counterexample'}{'' if fresh else ' (cached)'} "
                     f"{r.description}")
        if after_example is not None:
            after_example(index, fresh)
        if not r.ok:
            raise _Counterexample(r.reason)

    try:
        _hypothesis_test(ctx, strategy, prop)()
    except _Counterexample:
        if len(seen) >= 2 and _same_example(seen[-2], seen[-1]):
            seen.pop()  # hypothesis replays the failing example once more at the end: keep it once
        _, text, counts = decide(seen, ctx.params.get("min_supported"))
        record_horizons(ctx, seen)
        return PropertyResult(False, seen, seen[-1], "", counts)
    except (_SetAsideEnough, Unsatisfiable):   # too many drawn examples outside the hypotheses: decided below
        pass
    verdict, text, counts = decide(seen, ctx.params.get("min_supported"), requested, len(set_aside or ()))
    record_horizons(ctx, seen)
    return PropertyResult(verdict is True, seen, None, "" if verdict is not None else text, counts)


def _same_example(a: Example, b: Example) -> bool:
    return not a.ok and not b.ok and (a.description, repr(a.inputs)) == (b.description, repr(b.inputs))
