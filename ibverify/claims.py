"""The claim registry: one TOML file per claim in `claims/`, loaded into `Claim` records.

A claim file holds data only (id, paper, result, status, statement, params, tolerances, tiers) and
names the plain function that checks it (`check = "module:function"`). The function receives a
`CheckContext` and returns an `ibverify.evidence.Outcome`.

Status and expectation:
- paper / derived / reconstructed: the suite expects the claim to HOLD (derived: follows mathematically
  from the papers' statements, e.g. baek.gr-v-isotropic);
- law: a law found by measurement beyond the papers, stated as a prediction with a tolerance and judged on data it
  was not derived from (fresh draws per seed, `fresh_stride`); expected to HOLD, with a control that breaks it;
- control: a negative control, expected to be REFUTED (the check must be able to fail);
- beyond: a finding, reported as measured (no pass/fail of a paper); a finding that is not a law says in its
  statement why it cannot be a prediction.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from . import claim_schema, optfile
from .errors import IbverifyError
from .codehash import NOT_DECIDING, definition_dump, module_code_hash
from .evidence import Outcome

STATUSES = claim_schema.STATUSES   # the keys of a claim file, their types and meanings: ibverify.claim_schema
TIERS = claim_schema.TIERS
REQUIRED = ("id", "paper", "result", "status", "statement", "check")

# verdict words; INCONCLUSIVE: the evidence at the horizon reached decides neither way (never as expected)
HOLDS, FAILS, REFUTED, NOT_REFUTED, FINDING, ERROR, INCONCLUSIVE = (
    "holds", "does not hold", "refuted", "not refuted", "finding", "error", "inconclusive")
VERDICTS = (HOLDS, FAILS, REFUTED, NOT_REFUTED, FINDING, ERROR, INCONCLUSIVE)


@dataclass
class Claim:
    id: str
    paper: str
    result: str
    status: str
    statement: str
    check: str
    params: dict[str, Any] = field(default_factory=dict)
    tolerances: dict[str, Any] = field(default_factory=dict)
    tiers: dict[str, dict[str, Any]] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    controls: list[str] = field(default_factory=list)
    convention: dict[str, Any] = field(default_factory=dict)
    expect_verdict: str = ""   # a control of a rule half that can only withhold support: "inconclusive"
    path: str = ""

    @property
    def expect(self) -> str:
        return self.expect_verdict or {"control": REFUTED, "beyond": FINDING}.get(self.status, HOLDS)

    def params_for(self, tier: str) -> dict[str, Any]:
        """Claim params with the tier's overrides applied."""
        if tier not in self.tiers:
            raise IbverifyError(f"claim {self.id} has no '{tier}' tier (has: {', '.join(self.tiers)})")
        p = {**self.params, **self.tiers[tier]}
        source = p.pop("sequential_from", None)
        if source is not None:   # the ×10 horizons start at that tier's horizon, up to this tier's cap
            p["first_horizon"] = horizon_of(self.params_for(source))
        return p

    def tol(self, name: str) -> float:
        t = self.tolerances[name]
        return float(t["value"] if isinstance(t, dict) else t)

    def function(self) -> Callable[["CheckContext"], Outcome]:
        mod, _, fn = self.check.partition(":")
        try:
            return getattr(importlib.import_module(mod), fn)
        except (ImportError, AttributeError) as e:
            raise IbverifyError(f"claim {self.id}: check '{self.check}' cannot be loaded: {e}") from None

    def check_hash(self) -> str:
        """Hash of what decides the verdict: the check function's own code, the claim's data, and the code
        of the check's module with every ibverify module it imports, directly or not (ibverify.codehash:
        docstrings, comments, layout and moving a function between those modules do not count; a change to
        the engine, optimizer or oracle code under the check does; a compiled kernel that CI holds to its numpy
        reference counts through that reference, codehash.ACCELERATED, but in a check that judges the kernels,
        codehash.KERNEL_JUDGES), and the content (sha256) of the user's optimizer and data files the claim names.
        A stale baseline shows a different hash."""
        fn = self.function()
        mod = sys.modules[self.check.partition(":")[0]]
        try:
            own = definition_dump(fn)
            skip = () if self.names_foreign_optimizer() else NOT_DECIDING
            code = module_code_hash(mod.__name__, getattr(mod, "__file__", None), skip)
        except (OSError, SyntaxError, ValueError) as e:
            raise IbverifyError(f"claim {self.id}: cannot hash the code of check '{self.check}': {e}") from None
        data = repr((self.params, self.tolerances, self.tiers, self.status))
        files = self.optimizer_files()
        data += repr(files) if files else ""   # a user's optimizer file: its content decides the verdict too
        datafiles = self.data_files()
        data += repr(datafiles) if datafiles else ""   # a user's data file (`verify --data`): likewise
        return hashlib.sha256("\0".join((own, data, code)).encode()).hexdigest()[:16]

    def data_files(self) -> dict[str, str]:
        """{file: sha256 of its bytes} of the data files the claim's params name (`data_file`, set by `ibverify
        verify --data FILE`; also inside a `datasets` list of tables, in params or a tier): part of the check hash and
        the resume-cache key, so an edited file is a new check and never reuses a row of its former content."""
        named: list[str] = []
        for table in [self.params, *self.tiers.values()]:
            nested = table.get("datasets") if isinstance(table.get("datasets"), list) else []
            for t in [table, *nested]:
                if isinstance(t, dict) and t.get("data_file"):
                    named.append(str(t["data_file"]))
        return {f: file_sha256(f) for f in dict.fromkeys(named)}

    def names_foreign_optimizer(self) -> bool:
        """Whether any string of the claim's params or tiers names an optimizer that is not a row of the table: a
        user's file (`path.py[:function]`), `torch:…` or `optax:…` (then the adapter modules count in its check
        hash: codehash.NOT_DECIDING)."""
        def strings(v):
            if isinstance(v, str):
                yield v
            elif isinstance(v, dict):
                for x in v.values():
                    yield from strings(x)
            elif isinstance(v, (list, tuple)):
                for x in v:
                    yield from strings(x)
        return any(s.strip().startswith(("torch:", "optax:")) or optfile.split(s)
                   for s in strings([self.params, self.tiers]))

    def optimizer_files(self) -> dict[str, str]:
        """{file: sha256} of the user's optimizer files the claim names (`optimizer = "my_opt.py:make"`, resolved
        from the claim file's folder at loading): part of the check hash, so an edited file is a new check."""
        named = [self.params.get("optimizer")] + [t.get("optimizer") for t in self.tiers.values()]
        return {n: optfile.content_hash(n) for n in named if optfile.split(n)}


@dataclass
class CheckContext:
    """What a check function gets: the claim, its tier-resolved parameters, a seed and a progress hook.

    cache: the folder of this run's resume cache (`ibverify.cache.RunCache`), None when caching is off;
    `run_property` reuses the examples stored there. on_example: called once per evaluated (or reused)
    example, for whole-run progress. map_examples(evaluate, drawn) -> [Example | None]: evaluates
    examples in parallel (set in a Dask worker: examples as tasks); None: one after the other."""

    claim: Claim
    tier: str
    params: dict[str, Any]
    seed: int = 0
    progress: Callable[[str], None] = lambda msg: None
    cache: Any = None
    on_example: Callable[[], None] = lambda: None
    map_examples: Callable[[Callable, list], list] | None = None
    store: Any = None      # the run store (ibverify.recipes.RunStore); None: the process's store
    registry: Mapping[str, "Claim"] | None = None  # claims by id, for checks over other claims' runs
    # {decision, horizon, reached} of each example judged at a horizon (prop.sequential), appended by
    # prop.run_property; the results row carries them as outcome.horizons (shared with family() contexts)
    horizons: list = field(default_factory=list, repr=False, compare=False)

    def family(self, claim_id: str, **overrides) -> "CheckContext":
        """The context of another claim (its tier parameters, convention and hypothesis seed, `overrides` on top),
        keeping this context's tier, seed, store and hooks."""
        if self.registry is not None:
            c = self.registry.get(claim_id)
        else:   # the claim file beside this claim's own, else the default registry's (one file, not all of them)
            near = [Path(self.claim.path).parent] if self.claim.path else []
            found = [f for f in (d / f"{claim_id}.toml" for d in near + [default_claims_dir()]) if f.is_file()]
            c = load_claim(found[0]) if found else None
        if c is None:
            raise IbverifyError(f"{self.claim.id}: unknown family claim {claim_id!r}")
        return dataclasses.replace(self, claim=c, params={**c.convention, **c.params_for(self.tier), **overrides})

    def tol(self, name: str) -> float:
        return self.claim.tol(name)

    @property
    def status(self) -> str:
        return self.claim.status


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes ("missing" for a file that cannot be read: its loader says why)."""
    try:
        return hashlib.sha256(Path(path).expanduser().read_bytes()).hexdigest()
    except OSError:
        return "missing"


def verdict(claim: Claim, outcome: Outcome | None) -> str:
    """The verdict word from the predicate's truth and the claim's status."""
    if outcome is None:
        return ERROR
    if claim.status == "beyond":
        return FINDING
    if outcome.inconclusive:
        return INCONCLUSIVE
    if outcome.holds is None:
        return ERROR
    if claim.status == "control":
        return NOT_REFUTED if outcome.holds else REFUTED
    return HOLDS if outcome.holds else FAILS


def as_expected(claim: Claim, word: str) -> bool:
    return word == claim.expect


def default_claims_dir() -> Path:
    """`$IBVERIFY_CLAIMS`, else `./claims`, else the copy installed with the package."""
    env = os.environ.get("IBVERIFY_CLAIMS")
    if env:
        return Path(env)
    here = Path.cwd() / "claims"
    if here.is_dir() and any(here.glob("*.toml")):
        return here
    repo = Path(__file__).resolve().parent.parent / "claims"
    if repo.is_dir():
        return repo
    return Path(sys.prefix) / "share" / "ibverify" / "claims"


def load_claim(path: Path) -> Claim:
    try:
        data = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as e:
        raise IbverifyError(f"{path}: invalid TOML: {e}") from None
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise IbverifyError(f"{path}: claim file lacks {', '.join(missing)}")
    claim_schema.validate(data, path)   # unknown or ill-typed keys: one line with the closest valid key
    if data["status"] not in STATUSES:
        raise IbverifyError(f"{path}: status must be one of {STATUSES}, got {data['status']!r}")
    unknown = set(data.get("tiers", {})) - set(TIERS)
    if unknown:
        raise IbverifyError(f"{path}: unknown tier(s) {sorted(unknown)}; tiers are {TIERS}")
    if data.get("expect_verdict", INCONCLUSIVE) != INCONCLUSIVE or ("expect_verdict" in data
                                                                    and data["status"] != "control"):
        raise IbverifyError(f"{path}: expect_verdict may only be 'inconclusive', and only for a control")
    if Path(path).stem != data["id"]:
        raise IbverifyError(f"{path}: file name must be the claim id {data['id']!r}")
    for table in [data.get("params", {}), *data.get("tiers", {}).values()]:   # a user's optimizer file: relative
        if isinstance(table, dict) and "optimizer" in table:                  # to the claim file's folder
            table["optimizer"] = optfile.absolute(table["optimizer"], Path(path).resolve().parent)
    return Claim(**data, path=str(path))


def load_registry(directory: Path | None = None) -> list[Claim]:
    d = Path(directory) if directory else default_claims_dir()
    files = sorted(d.glob("*.toml"))
    if not files:
        raise IbverifyError(f"no claim files (*.toml) in {d}")
    claims = [load_claim(f) for f in files]
    ids = [c.id for c in claims]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise IbverifyError(f"duplicate claim ids: {sorted(dup)}")
    return claims


def select(claims: list[Claim], ids: list[str] | None, tier: str) -> list[Claim]:
    """Claims named by `ids` (exact ids or prefixes like `baek.`), restricted to those with `tier`."""
    if ids:
        chosen = [c for c in claims if any(c.id == i or (i.endswith(".") and c.id.startswith(i)) for i in ids)]
        unknown = [i for i in ids if not any(c.id == i or (i.endswith(".") and c.id.startswith(i)) for c in claims)]
        if unknown:
            raise IbverifyError(f"unknown claim id(s): {', '.join(unknown)} (see `ibverify claims`)")
        missing = [c.id for c in chosen if tier not in c.tiers and c.id in ids]  # named exactly
        if missing:
            raise IbverifyError(f"claim(s) {', '.join(missing)} have no '{tier}' tier")
        return [c for c in chosen if tier in c.tiers]  # a prefix selects the claims that have the tier
    return [c for c in claims if tier in c.tiers]


def horizon_of(params: dict[str, Any]) -> int:
    """A tier's first horizon: its `steps`, `epochs` or family `run_overrides.steps` (the one it has)."""
    for h in (params.get("steps"), params.get("epochs"), params.get("run_overrides", {}).get("steps")):
        if h is not None:
            return int(h)
    raise IbverifyError("sequential_from: the source tier has no horizon (steps, epochs or run_overrides.steps)")
