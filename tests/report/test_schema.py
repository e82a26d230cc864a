import json
import os

import pytest

from ibverify import IbverifyError
from ibverify.evidence import Outcome, Series
from ibverify.report import load_results, validate_results, write_results

from .conftest import claim_of


def test_fixture_is_valid_and_covers_every_status_and_verdict(results):
    validate_results(results)
    assert {c["status"] for c in results["claims"]} == {"paper", "reconstructed", "control", "beyond"}
    assert {c["verdict"] for c in results["claims"]} == {
        "holds", "does not hold", "refuted", "not refuted", "finding", "error"}


def test_outcome_to_json_fits_the_schema(results):
    o = Outcome(True, "f", {"a": float("inf")}, [Series("s", [1, 2], [float("nan"), 1.0])]).to_json()
    claim_of(results, "baek.gr-inc-adam-l2")["outcome"] = o
    validate_results(results)


def _set(path):
    def mutate(r):
        *head, last = path
        d = r
        for k in head:
            d = d[k]
        d[last] = mutate.value
    return mutate


BAD = [  # (mutation, words the one-line message must contain)
    (lambda r: r.pop("schema"), "schema is missing"),
    (lambda r: r.update(schema="ibverify.results/0"), "unsupported results version"),
    (lambda r: r.pop("versions"), "versions is missing"),
    (lambda r: r["claims"][0].update(status="folklore"), "claims[0] (baek.gr-inc-adam-l2).status"),
    (lambda r: r["claims"][1].update(verdict="maybe"), "claims[1] (zhang.det-adam-linf).verdict"),
    (lambda r: r["claims"][0].update(as_expected=False), "as_expected"),
    (lambda r: r["claims"][3].update(expect="holds"), "claims[3] (baek.control.gr-inc-adam-linf).expect"),
    (lambda r: r["claims"][0]["outcome"]["series"][0]["x"].pop(), "series[0] has len(x)=4 != len(y)=5"),
    (lambda r: r["claims"][0]["outcome"]["series"][1]["y"].__setitem__(2, float("nan")),
     "series[1].y[2] must be a finite number or null, got nan"),
    (lambda r: r["claims"][0]["outcome"]["figures"].update(cos="high"), "outcome.figures.cos"),
    (lambda r: r["claims"][0]["outcome"]["series"][0].update(log_y="yes"),
     "series[0].log_y must be a boolean, got string"),
    (lambda r: r["claims"][0].update(runtime_s="1s"), "runtime_s must be a finite number or null, got string"),
    (lambda r: r["claims"][0].update(outcome=None),
     "outcome must be an object, got null (required unless the verdict is 'error')"),
    (lambda r: r["claims"][6].update(error=1),
     "claims[6] (gronich.muon-msp).error must be a string or null, got integer"),
    (lambda r: r["claims"][0].pop("reproduce"), "reproduce is missing"),
    (lambda r: r["claims"][0].update(seed=True), "seed must be an integer, got boolean"),
    (lambda r: r["summary"].update(total=3), "summary.total is 3 but the claim rows give 8"),
    (lambda r: r["summary"].update(unexpected=r["summary"]["unexpected"] + 1),
     "summary.unexpected is"),                                   # issue 21: a doctored summary was accepted
    (lambda r: r["summary"].update(inconclusive=2), "summary.inconclusive is 2 but the claim rows give 0"),
    (lambda r: r["claims"][0].update(verdict="maybe"), "must be one of"),
    (lambda r: r["claims"].append(dict(r["claims"][0])) or r["summary"].update(total=9), "duplicates"),
    (lambda r: r.update(tracked={"x": {"cos": {"better": "up"}}}), "tracked.x.cos.better"),
    (lambda r: r.update(tracked={"x": {"cos": {"rtol": -1}}}), "tracked.x.cos.rtol must be >= 0"),
    (lambda r: r["claims"].__setitem__(2, []), "claims[2] must be an object, got array"),
]


@pytest.mark.parametrize("mutate,words", BAD, ids=[w for _, w in BAD])
def test_bad_results_name_the_field_in_one_line(results, mutate, words):
    mutate(results)
    with pytest.raises(IbverifyError) as e:
        validate_results(results)
    msg = str(e.value)
    assert words in msg and "\n" not in msg and msg.startswith("results: ")


def test_write_then_load_round_trips(results, tmp_path):
    p = write_results(results, tmp_path / "sub" / "results.json")
    assert load_results(p) == results
    assert [f.name for f in p.parent.iterdir()] == ["results.json"]


def test_write_is_atomic_when_replace_fails(results, tmp_path, monkeypatch):
    p = tmp_path / "results.json"
    write_results(results, p)
    before = p.read_bytes()
    results["tier"] = "full"

    def crash(src, dst):
        raise OSError("disk gone")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        write_results(results, p)
    assert p.read_bytes() == before and sorted(f.name for f in tmp_path.iterdir()) == ["results.json"]


def test_invalid_or_unserialisable_results_write_nothing(results, tmp_path):
    p = tmp_path / "results.json"
    results["claims"][0]["params"]["lr"] = float("nan")  # params are free-form, but JSON has no NaN
    with pytest.raises(IbverifyError, match="cannot be written as JSON"):
        write_results(results, p)
    results["schema"] = "nope"
    with pytest.raises(IbverifyError):
        write_results(results, p)
    assert list(tmp_path.iterdir()) == []


def test_load_errors_are_one_line_with_the_path(results, tmp_path):
    with pytest.raises(IbverifyError, match="cannot read results file"):
        load_results(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(IbverifyError, match="bad.json: not valid JSON"):
        load_results(bad)
    results["summary"]["errors"] = -1
    bad.write_text(json.dumps(results))
    with pytest.raises(IbverifyError, match=r"bad.json: results: summary.errors") as e:
        load_results(bad)
    assert "\n" not in str(e.value)


def test_published_schema_is_draft_2020_12_and_accepts_the_fixture(results):
    import jsonschema

    from ibverify.report.schema import SCHEMA_FILE, json_schema

    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(results)  # plain jsonschema, as another tool would
    assert SCHEMA_FILE.parent.name == "report"


def test_old_results_files_still_load():
    from pathlib import Path

    baseline = Path(__file__).resolve().parents[2] / "ci" / "baseline-fast.json"
    if not baseline.is_file():
        pytest.skip("no ci/baseline-fast.json in this checkout")
    r = load_results(baseline)
    assert r["tier"] == "fast" and len(r["claims"]) >= 40


@pytest.mark.parametrize("s,text", [(None, "—"), (0.5, "0.50 s"), (59.99, "59.99 s"), (59.996, "1m 00s"),
                                    (119.7, "2m 00s"), (65.2, "1m 05s"), (3599.6, "1h 00m"), (7405, "2h 03m")])
def test_runtimes_never_round_out_of_their_field(s, text):
    from ibverify.report.html import _runtime

    assert _runtime(s) == text    # issue 21: 119.7 s printed as "1m 60s"
