"""Synthetic results dicts covering every status and verdict, built through the real evidence types."""

from __future__ import annotations

import copy
from html.parser import HTMLParser

import pytest

from ibverify.claims import Claim, as_expected, verdict
from ibverify.evidence import Outcome, Series

STEPS = [1, 10, 100, 1000, 10000]


def claim_record(cid, status, outcome, *, paper="Baek, Song, Yun (ICLR 2026)", error=None, tolerances=None):
    claim = Claim(id=cid, paper=paper, result=f"result of {cid}", status=status,
                  statement=f"statement of {cid} <b>not bold</b>", check="ibverify.checks.x:check",
                  params={"examples": 2, "beta1": 0.9}, tolerances=tolerances or {},
                  assumptions=["logistic loss", "η_t = η0 (t+1)^(-1/2)"], convention={"eps": 0.0})
    word = verdict(claim, outcome)
    return {
        "id": cid, "paper": claim.paper, "result": claim.result, "status": status,
        "statement": claim.statement, "assumptions": claim.assumptions, "convention": claim.convention,
        "expect": claim.expect, "verdict": word, "as_expected": as_expected(claim, word),
        "tier": "fast", "params": claim.params, "tolerances": claim.tolerances,
        "check": claim.check, "check_hash": "0123456789abcdef", "runtime_s": 1.25, "seed": 0,
        "reproduce": f"ibverify verify {cid} --tier fast --seed 0",
        "outcome": outcome.to_json() if outcome else None, "error": error,
    }


def gap_series(name="gap 1-cos(w, w2)", group=""):
    return Series(name, STEPS, [0.5, 0.1, 0.0, 1e-3, 1e-4], ylabel="gap", group=group)


def build_results():
    cos = Series("cos to w2", STEPS, [0.9, 0.99, 0.999, 0.9995, 0.9999], log_y=False, group="cosines")
    cos_inf = Series("cos to w_inf", STEPS, [0.8, 0.85, float("nan"), 0.86, 0.86], log_y=False, group="cosines")
    claims = [
        claim_record("baek.gr-inc-adam-l2", "paper",
                     Outcome(True, "cos 0.9999, gap falls", {"cos": 0.9999, "gap": 1e-4},
                             [gap_series(), cos, cos_inf], "gap shrinks along the run", 6,
                             decisions={"supported": 5, "set aside": 1}),
                     tolerances={"cos_min": {"value": 0.999, "why": "starting tolerance"}}),
        claim_record("zhang.det-adam-linf", "paper",
                     Outcome(False, "margin gap 7%", {"gap": 0.07}, [gap_series("margin gap")], examples=3,
                             counterexample={"X": [[1.0, 2.0], [3.0, -4.0]], "y": [1, -1], "beta1": 0.5},
                             decisions={"supported": 1, "contradicted": 1, "inconclusive": 1}),
                     paper="Zhang et al. (2024)"),
        claim_record("baek.inc-adam-near-proxy", "reconstructed",
                     Outcome(True, "cos to fixed point 0.995", {"cos": 0.995}, [gap_series()],
                             decisions={"supported": 1})),
        claim_record("baek.control.gr-inc-adam-linf", "control",
                     Outcome(False, "linf gap stays 12%", {"gap": 0.12}, [gap_series()],
                             decisions={"contradicted": 1})),
        claim_record("baek.control.signum-no-momentum", "control",
                     Outcome(True, "linf gap 0.1%", {"gap": 0.001}, [gap_series()], decisions={"supported": 1})),
        claim_record("baek.beyond.reshuffling", "beyond",
                     Outcome(None, "cos between limits 0.98", {"cos": 0.98}, [gap_series()],
                             table=[{"seed": 0, "cos": 0.98, "agrees": True},
                                    {"seed": 1, "cos": 0.97, "agrees": False}], decisions={"supported": 2})),
        claim_record("gronich.muon-msp", "paper", None, paper="Gronich et al.",
                     error="Traceback (most recent call last):\nValueError: solver failed <inaccurate>"),
        claim_record("gronich.own-norm-wins", "paper",
                     Outcome(True, "ordering holds on 3 seeds", {}, [Series("all non-positive", [1, 2], [0.0, -1.0])],
                             table=[{"seed": s, "adam": 0.1 * s, "muon": 0.2 * s} for s in range(3)],
                             decisions={"supported": 3}),
                     paper="Gronich et al."),
    ]
    n_ok = sum(c["as_expected"] for c in claims)
    errors = sum(c["verdict"] == "error" for c in claims)
    return {
        "schema": "ibverify.results/1", "created": "2026-11-29T20:00:00Z", "tier": "fast", "seed": 0,
        "versions": {"ibverify": "0.1.0", "python": "3.11.7", "numpy": "2.4.6", "cvxpy": None},
        "summary": {"total": len(claims), "as_expected": n_ok, "unexpected": len(claims) - n_ok, "errors": errors,
                    "inconclusive": sum(c["verdict"] == "inconclusive" for c in claims)},
        "claims": claims,
    }


RESULTS = build_results()


@pytest.fixture
def results():
    return copy.deepcopy(RESULTS)


def claim_of(results, cid):
    return next(c for c in results["claims"] if c["id"] == cid)


class Dom(HTMLParser):
    """Elements as (tag, attrs) in document order, and the text inside each element with an id."""

    def __init__(self, html: str):
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.text_by_id: dict[str, str] = {}
        self._open_ids: list[tuple[str, str]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if "id" in a:
            self._open_ids.append((tag, a["id"]))
            self.text_by_id.setdefault(a["id"], "")

    def handle_endtag(self, tag):
        if self._open_ids and self._open_ids[-1][0] == tag:
            self._open_ids.pop()

    def handle_data(self, data):
        for _, i in self._open_ids:
            self.text_by_id[i] += data

    def find(self, tag, **attrs):
        return [a for t, a in self.elements if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items())]
