"""Is a baseline the record of the current code? (`ibverify compare --fresh`, `ibverify verify --stale`.)

A baseline (e.g. ci/baseline-full.json) is *fresh* when, for its tier, every claim of the registry that has the
tier has a row, every row's `check_hash` is the claim's hash now (`Claim.check_hash`: the check's code with
everything it imports, the claim's parameters, tolerances and data), no row was made from a checkout with
uncommitted changes (`dirty` true) and no row belongs to a claim that is gone from the registry (or lost the tier).
Each failure names the claim:
    MISSING  a claim with the tier and no row
    STALE    a row whose check hash differs from the code's (or whose check cannot be hashed now)
    DIRTY    a row made from uncommitted code (it can never be part of a baseline)
    DROPPED  a row of a claim no longer in the registry with that tier
`freshness(baseline, claims).rerun` is what `verify --stale` runs (MISSING, STALE and DIRTY, registry order);
it drops the DROPPED rows. Rows without provenance (written before rows carried commit and dirty) are not a
failure by themselves; the NOTE line counts them.
"""

from __future__ import annotations

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
    no_provenance: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)   # the registry's ids with the tier

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.dirty or self.dropped)

    @property
    def rerun(self) -> list[str]:
        """The claims to run again (missing, stale or dirty rows), in registry order."""
        want = set(self.missing) | {s[0] for s in self.stale} | set(self.dirty)
        return [i for i in self.order if i in want]

    def lines(self) -> list[str]:
        out = [f"MISSING {i}: has a {self.tier} tier, no row in the baseline" for i in self.missing]
        out += [f"STALE   {i}: check_hash {old or '(none)'} in the baseline, {new or '(cannot hash)'} now"
                for i, old, new in self.stale]
        out += [f"DIRTY   {i}: the row was made from a checkout with uncommitted changes" for i in self.dirty]
        out += [f"DROPPED {i}: row of a claim not in the registry with a {self.tier} tier" for i in self.dropped]
        if self.no_provenance:
            out.append(f"NOTE    {len(self.no_provenance)} row(s) carry no commit (written before rows recorded "
                       "their provenance)")
        return out

    def summary(self) -> str:
        if self.ok:
            return f"fresh: OK, all {self.rows} {self.tier}-tier rows are current"
        parts = [f"{len(v)} {k}" for k, v in (("missing", self.missing), ("stale", self.stale),
                                               ("dirty", self.dirty), ("dropped", self.dropped)) if v]
        return (f"fresh: FAILED, {', '.join(parts)} of the {len(self.order)} claims with a {self.tier} tier "
                f"({self.rows} rows); refresh with `ibverify verify --stale BASELINE`")


def freshness(baseline: dict, claims: list) -> Freshness:
    """Compare a (validated) baseline results dict with the registry `claims` (ibverify.claims.Claim, all of them:
    those without the baseline's tier are what DROPPED means)."""
    tier = baseline["tier"]
    have = [c for c in claims if tier in c.tiers]
    rows = {r["id"]: r for r in baseline["claims"]}
    res = Freshness(tier, rows=len(rows), order=[c.id for c in have])
    for c in have:
        row = rows.get(c.id)
        if row is None:
            res.missing.append(c.id)
            continue
        try:
            now = c.check_hash()
        except IbverifyError:
            now = ""
        if not now or row.get("check_hash") != now:
            res.stale.append((c.id, row.get("check_hash") or "", now))
        elif row.get("dirty") is True:
            res.dirty.append(c.id)
        if not row.get("commit"):
            res.no_provenance.append(c.id)
    known = set(res.order)
    res.dropped = [i for i in rows if i not in known]
    return res
