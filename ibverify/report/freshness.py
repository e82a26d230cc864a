"""Is a baseline the record of the current code? (`ibverify compare --fresh`, `ibverify verify --stale`.)

A baseline (e.g. ci/baseline-full.json) is *current* when, for its tier, every claim of the registry that has the
tier has a row, every row's `check_hash` is the claim's hash now (`Claim.check_hash`: the check's code with
everything it imports, the claim's parameters, tolerances and data), no row was made from a checkout with
uncommitted changes (`dirty` true) and no row belongs to a claim that is gone from the registry (or lost the tier).
The gate (`ok`) fails, naming the claim, on
    MISSING     a claim with the tier and no row
    DIRTY       a row made from uncommitted code (it can never be part of a baseline)
    DROPPED     a row of a claim no longer in the registry with that tier
    UNEXPECTED  a row whose verdict is not as expected, but for an inconclusive row whose undecided examples' fitted
                crossings of their bound are published with it (`published_crossings`: the row's own details say
                at which horizon it would be decided)
and names, without failing, each
    STALE       a row whose check hash differs from the code's (or whose check cannot be hashed now), with the
                commit it was made at: the record trails the code; docs/full-tier.md and the report show it stale
A record may trail the code (its rows re-made in slices, `verify --stale --budget-…`); it never presents a stale row
as current. A record still being built (`partial`: the full tier at seeds 1 and 2, `compare --fresh --partial`)
names its missing rows NOT YET instead of failing on them; everything else is gated as above.
`freshness(baseline, claims).rerun` is what `verify --stale` runs (MISSING, STALE and DIRTY, registry order); it
drops the DROPPED rows. Rows without provenance (written before rows carried commit and dirty) are not a
failure by themselves; the NOTE line counts them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import IbverifyError


@dataclass
class Freshness:
    tier: str
    rows: int = 0
    missing: list[str] = field(default_factory=list)
    stale: list[tuple[str, str, str]] = field(default_factory=list)   # (id, baseline hash, code hash)
    dirty: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    unexpected: list[tuple[str, str, str]] = field(default_factory=list)   # (id, verdict, expected)
    commits: dict[str, str] = field(default_factory=dict)   # id → the commit its row was made at ("" unknown)
    no_provenance: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)   # the registry's ids with the tier
    partial: bool = False   # a record still being built: missing rows are named, not failed

    @property
    def ok(self) -> bool:
        """The gate: no missing (unless partial), dirty, dropped or unexpected row (stale rows pass, named)."""
        return not ((self.missing and not self.partial) or self.dirty or self.dropped or self.unexpected)

    @property
    def current(self) -> int:
        """How many claims with the tier have a row made by the code as it is (no missing, stale or dirty row)."""
        return len(self.order) - len(self.rerun)

    @property
    def rerun(self) -> list[str]:
        """The claims to run again (missing, stale or dirty rows), in registry order."""
        want = set(self.missing) | {s[0] for s in self.stale} | set(self.dirty)
        return [i for i in self.order if i in want]

    def lines(self) -> list[str]:
        out = [f"NOT YET {i}: has a {self.tier} tier, no row yet (a partial record: not failing)" if self.partial else
               f"MISSING {i}: has a {self.tier} tier, no row in the baseline" for i in self.missing]
        out += [f"STALE   {i}: made at commit {self.commits.get(i, '')[:7] or '(unknown)'}, check_hash "
                f"{old or '(none)'} in the baseline, {new or '(cannot hash)'} now (not failing: shown as stale)"
                for i, old, new in self.stale]
        out += [f"DIRTY   {i}: the row was made from a checkout with uncommitted changes" for i in self.dirty]
        out += [f"DROPPED {i}: row of a claim not in the registry with a {self.tier} tier" for i in self.dropped]
        out += [f"UNEXPECTED {i}: verdict {v}, expected {e} (and no published fitted crossing)"
                for i, v, e in self.unexpected]
        if self.no_provenance:
            out.append(f"NOTE    {len(self.no_provenance)} row(s) carry no commit (written before rows recorded "
                       "their provenance)")
        return out

    def summary(self) -> str:
        stale = f"{len(self.stale)} stale row(s) named above (made at older code; not failing)" if self.stale else ""
        if self.ok and self.partial and self.missing:
            return (f"fresh: OK (partial record), {self.current} of {len(self.order)} {self.tier}-tier rows current, "
                    f"{len(self.missing)} not yet made" + (f"; {stale}" if stale else "")
                    + "; make more with `ibverify verify --stale BASELINE --budget-cpu-min M`")
        if self.ok:
            if not self.stale:
                return f"fresh: OK, all {self.rows} {self.tier}-tier rows are current"
            return (f"fresh: OK, {self.current} of {len(self.order)} {self.tier}-tier rows current; {stale}; refresh "
                    "with `ibverify verify --stale BASELINE`")
        parts = [f"{len(v)} {k}" for k, v in (("missing", self.missing), ("dirty", self.dirty),
                                               ("dropped", self.dropped), ("unexpected", self.unexpected)) if v]
        return (f"fresh: FAILED, {', '.join(parts)} of the {len(self.order)} claims with a {self.tier} tier "
                f"({self.rows} rows)" + (f", and {stale}" if stale else "")
                + "; refresh with `ibverify verify --stale BASELINE`")


def freshness(baseline: dict, claims: list, partial: bool = False) -> Freshness:
    """Compare a (validated) baseline results dict with the registry `claims` (ibverify.claims.Claim, all of them:
    those without the baseline's tier are what DROPPED means); `partial`: a record still being built."""
    tier = baseline["tier"]
    have = [c for c in claims if tier in c.tiers]
    rows = {r["id"]: r for r in baseline["claims"]}
    res = Freshness(tier, rows=len(rows), order=[c.id for c in have], partial=partial)
    for c in have:
        row = rows.get(c.id)
        if row is None:
            res.missing.append(c.id)
            continue
        res.commits[c.id] = row.get("commit") or ""
        try:
            now = c.check_hash()
        except IbverifyError:
            now = ""
        if not now or row.get("check_hash") != now:
            res.stale.append((c.id, row.get("check_hash") or "", now))
        if row.get("dirty") is True:   # stale or not: a dirty row never passes
            res.dirty.append(c.id)
        if not row.get("as_expected") and not published_crossings(row):
            res.unexpected.append((c.id, row.get("verdict", ""), row.get("expect", "")))
        if not row.get("commit"):
            res.no_provenance.append(c.id)
    known = set(res.order)
    res.dropped = [i for i in rows if i not in known]
    return res


CROSSING = re.compile(r"reaches \S+ at ≈ ([0-9.e+-]+) steps")   # the rule's "on track: reaches B at ≈ T steps"


def crossing_steps(row: dict) -> list[float]:
    """For an inconclusive row: the horizons (sorted) at which its undecided examples' fitted trends cross their
    bounds, from the rule's words in the row's details; [] for any other verdict or when the details give none."""
    if row.get("verdict") != "inconclusive":
        return []
    return sorted(float(t) for t in CROSSING.findall(str((row.get("outcome") or {}).get("details") or "")))


def published_crossings(row: dict) -> str:
    """The clause docs/full-tier.md publishes with an unexpected inconclusive row ("fitted crossing of the bound at
    ≈ 3.9e+10–6.4e+11 steps (6 undecided example(s) on track)"); "" when there is none. Such a row passes the
    freshness gate: it is not a wrong verdict but one not yet decided, with the horizon that would decide it."""
    found = crossing_steps(row)
    if not found:
        return ""
    span = f"{found[0]:.2g}" if found[0] == found[-1] else f"{found[0]:.2g}–{found[-1]:.2g}"
    return f"fitted crossing of the bound at ≈ {span} steps ({len(found)} undecided example(s) on track)"
