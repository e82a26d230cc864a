"""Regression gate: compare a baseline results dict with the current one.

Failures (`CompareResult.ok` is False), one line each naming the claim:
- the verdict got worse, by rank: as expected (3) > inconclusive or not applicable (2) > unexpected (1) > error (0);
  e.g. holds → inconclusive, inconclusive → does not hold, refuted → not refuted, anything → error. A control
  "not applicable" to the data (`verify --data`: the data cannot refute it) ranks with inconclusive, as judged
  neither way: refuted → not applicable fails (the same file no longer tests the control), not applicable →
  not refuted or → error fails, not applicable → refuted is BETTER, not applicable ↔ inconclusive is a CHANGE line.
  (A claim that was already unexpected in the baseline and still is does not fail the gate; `ibverify verify`'s
  exit status covers absolute failures.)
- a tracked figure regressed beyond its tolerance, became null, or disappeared;
- a baseline claim is missing from the current results;
- more examples are "not yet" than in the baseline: the count of inconclusive examples, or of set-aside examples
  (outside the hypotheses), grew (`outcome.counts`; a baseline row without it falls back on its
  `outcome.decisions`, and a row with neither — a check that judges no examples three-valued — is not gated, which
  one NOTE line lists). A current row that lost its counts while the baseline had them fails too.
Reported but not failing: new claims, improvements (fewer inconclusive or set-aside examples too), stale
baseline (`check_hash` changed: the check or the claim's data changed since the baseline was made), tier mismatch.

Tracked figures: a spec `{"better": "higher"|"lower", "rtol": 0.05, "atol": 0.0}` makes figure f regress
when it moves in the worse direction by more than max(rtol·|baseline f|, atol). Specs, later wins:
1. the baseline claim's tolerances (they live in the claim file, so they survive a baseline refresh):
   a tolerance `<name>_min` / `<name>_max` bounds a figure from below / above, so higher / lower is
   better; the figure is the tolerance's `figure` key (`gap_max = {value = 0.03, why = "...",
   figure = "max_linf_gap"}`, optional `rtol`, `atol`, `better`), else the figure named `<name>`.
   For a control the direction flips (moving towards the bound is moving towards not refuted).
2. the baseline's top-level `"tracked": {"<claim id>": {"<figure>": spec}}`;
3. the `tracked` argument.
Untracked figures (and runtimes) are never compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .schema import NOT_APPLICABLE, error_line, row_counts, validate_results

DEFAULT_RTOL = 0.05


@dataclass
class CompareResult:
    ok: bool = True
    lines: list[str] = field(default_factory=list)
    failures: int = 0
    warnings: int = 0
    new: int = 0

    def add(self, kind: str, cid: str, text: str) -> None:
        self.lines.append(f"{kind:<6} {cid}: {text}")
        if kind == "FAIL":
            self.ok, self.failures = False, self.failures + 1
        self.warnings += kind == "WARN"
        self.new += kind == "NEW"

    def summary(self) -> str:
        head = "compare: OK" if self.ok else f"compare: FAILED, {self.failures} regression(s)"
        return f"{head}; {self.warnings} warning(s), {self.new} new claim(s)"


def _rank(c: dict) -> int:
    undecided = c["verdict"] in ("inconclusive", NOT_APPLICABLE)
    return 0 if c["verdict"] == "error" else 3 if c["as_expected"] else 2 if undecided else 1


def _figures(c: dict) -> dict:
    return (c.get("outcome") or {}).get("figures") or {}


NOT_YET = ("inconclusive", "set_aside")   # the per-example counts that must not grow (outcome.counts keys)


example_counts = row_counts   # a row's per-example counts (report.schema.row_counts)


def _compare_counts(res: CompareResult, cid: str, old: dict | None, new: dict | None, ungated: list[str]) -> None:
    if old is None:
        ungated.append(cid)
        return
    if new is None:
        res.add("FAIL", cid, "per-example counts were recorded in the baseline, none now "
                             f"(baseline: {old['inconclusive']} inconclusive, {old['set_aside']} set aside)")
        return
    for k in NOT_YET:
        word = k.replace("_", " ")
        if new[k] > old[k]:
            res.add("FAIL", cid, f"{word} examples {old[k]} → {new[k]}: more examples not decided than in the "
                                 "baseline")
        elif new[k] < old[k]:
            res.add("BETTER", cid, f"{word} examples {old[k]} → {new[k]}")


def tracked_specs(claim: dict, baseline_tracked: dict | None = None, extra: dict | None = None) -> dict:
    """figure name -> {"better", "rtol", "atol"} for one baseline claim."""
    figs = _figures(claim)
    specs: dict[str, dict] = {}
    flip = {"higher": "lower", "lower": "higher"}
    for name, tol in (claim.get("tolerances") or {}).items():
        tol = tol if isinstance(tol, dict) else {}
        stem, _, bound = name.rpartition("_")
        better = tol.get("better") or {"min": "higher", "max": "lower"}.get(bound)
        fig = tol.get("figure") or stem
        if better in flip and fig in figs:
            keep = {k: tol[k] for k in ("rtol", "atol") if k in tol}
            specs[fig] = {**keep, "better": flip[better] if claim["status"] == "control" else better}
    for source in (baseline_tracked or {}, extra or {}):
        for fig, spec in (source.get(claim["id"]) or {}).items():
            specs[fig] = {**specs.get(fig, {}), **spec}
    return {f: {"better": s.get("better", "higher"), "rtol": float(s.get("rtol", DEFAULT_RTOL)),
                "atol": float(s.get("atol", 0.0))} for f, s in specs.items()}


def _compare_figure(res: CompareResult, cid: str, fig: str, spec: dict, old, new) -> None:
    if old is None:
        return
    if new is None:
        res.add("FAIL", cid, f"tracked figure {fig} was {old:.6g}, now missing or non-finite")
        return
    slack = max(spec["rtol"] * abs(old), spec["atol"])
    sign = 1 if spec["better"] == "higher" else -1
    moved = sign * (new - old)  # > 0: better
    what = f"figure {fig} {old:.6g} → {new:.6g} ({spec['better']} is better, tolerance {slack:.3g})"
    if moved < -slack:
        res.add("FAIL", cid, f"{what}: regressed")
    elif moved > slack:
        res.add("BETTER", cid, what)


def compare(baseline: dict, current: dict, tracked: dict | None = None) -> CompareResult:
    """Compare two results dicts (validated here); see the module docstring for the rules."""
    validate_results(baseline)
    validate_results(current)
    res = CompareResult()
    ungated: list[str] = []
    now = {c["id"]: c for c in current["claims"]}
    base_ids = {c["id"] for c in baseline["claims"]}
    for b in baseline["claims"]:
        cid = b["id"]
        c = now.get(cid)
        if c is None:
            res.add("FAIL", cid, f"missing from current results (baseline verdict: {b['verdict']})")
            continue
        change = f"verdict {b['verdict']} → {c['verdict']}"
        if _rank(c) < _rank(b):
            detail = error_line(c.get("error")) if c["verdict"] == "error" else ""
            now_word = "error" if _rank(c) == 0 else c["verdict"] if _rank(c) == 2 else "unexpected"
            before = "as expected" if b["as_expected"] else b["verdict"] if _rank(b) == 2 else "unexpected"
            res.add("FAIL", cid, f"{change} ({before} before, "
                                 f"{now_word} now){': ' + detail if detail else ''}")
        elif _rank(c) > _rank(b):
            res.add("BETTER", cid, change)
        elif c["verdict"] != b["verdict"] or c["status"] != b["status"]:
            res.add("CHANGE", cid, f"{change}, status {b['status']} → {c['status']}")
        if c["check_hash"] != b["check_hash"]:
            res.add("WARN", cid, f"stale baseline: check_hash {b['check_hash']} → {c['check_hash']} "
                                 "(check or claim data changed; refresh the baseline if intended)")
        if c["tier"] != b["tier"]:
            res.add("WARN", cid, f"tier {b['tier']} in baseline, {c['tier']} now")
        for fig, spec in tracked_specs(b, baseline.get("tracked"), tracked).items():
            _compare_figure(res, cid, fig, spec, _figures(b).get(fig), _figures(c).get(fig))
        if c.get("outcome") is not None:   # an error row already fails on its verdict
            _compare_counts(res, cid, example_counts(b), example_counts(c), ungated)
    for c in current["claims"]:
        if c["id"] not in base_ids:
            res.add("NEW", c["id"], f"verdict {c['verdict']} (not in baseline)")
    if ungated:
        res.add("NOTE", f"{len(ungated)} claim(s)", "no per-example counts in the baseline (no three-valued examples), "
                                                    "inconclusive / set-aside not gated: " + ", ".join(ungated))
    return res
