"""`ibverify bias --report DIR`, several --optimizer, and Dask (ibverify.report.bias, ibverify.runner.bias).

Cheap: the smoke tier, the linear model, two generated datasets, table optimizers (nsd-l2 → l2, signum → ℓ∞).
Values, not shapes: the page's CSVs hold the very series of the JSON output, the provenance names the run's seed,
tier and knobs, and the Dask path gives exactly the answers and evidence of one sequential run per optimizer."""

import contextlib
import csv
import io
import json
import re
from html import unescape

import pytest

from ibverify import IbverifyError
from ibverify.checks import bias
from ibverify.cli import main
from ibverify.report.bias import estimate_text
from ibverify.optim import OptimizerSpec
from ibverify.runner.bias import identify_all

RUN = ["--tier", "smoke", "--model", "linear", "--datasets", "2"]
SEED = 3


def run_cli(args, capsys):
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """Two optimizers in this process, with a knob given, JSON on stdout and the report page (module scope:
    capsys is per test, so stdout is read here)."""
    folder = tmp_path_factory.mktemp("bias-report")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["bias", "--optimizer", "nsd-l2", "--optimizer", "signum", *RUN, "--seed", str(SEED),
                   "--lr-decay", "0.5", "--json", "-q", "--report", str(folder)])
    assert rc == 0
    return json.loads(buf.getvalue()), folder


def page_text(html: str) -> str:
    """The page without its inline SVG and CSS, tags dropped, entities unescaped, whitespace collapsed."""
    html = re.sub(r"<svg.*?</svg>|<style>.*?</style>|<script>.*?</script>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def sections(html: str) -> dict[str, str]:
    """Each optimizer's section of the page (by its heading)."""
    parts = re.split(r'<section class="optimizer-answer" id="opt-\d+"><h2>', html)[1:]
    return {p.split("</h2>", 1)[0]: p for p in parts}


def test_several_optimizers_print_a_json_list(report):
    outs, _ = report
    assert [o["optimizer"] for o in outs] == ["nsd-l2", "signum"]
    assert [o["models"][0]["supported"] for o in outs] == [["l2"], ["linf"]]
    assert all(o["knobs"] == {"lr_decay": 0.5} and o["seed"] == SEED and o["tier"] == "smoke" for o in outs)


def test_page_names_every_geometry_with_its_word(report):
    outs, folder = report
    html = (folder / "index.html").read_text()
    secs = sections(html)
    assert list(secs) == ["nsd-l2", "signum"]
    for o in outs:
        (m,) = o["models"]
        rows = dict(re.findall(r'data-geometry="(\w+)" data-word="(\w+)"', secs[o["optimizer"]]))
        want = {g: w for w in ("supported", "contradicted", "inconclusive") for g in m[w]}
        assert rows == want and set(rows) == {"l1", "l2", "linf"}
        for g, ev in m["evidence"].items():   # the evidence line and tally in the geometry's own row
            row = re.search(rf'<tr class="geometry" data-geometry="{g}".*?</tr>', secs[o["optimizer"]])[0]
            within = (f" to within {100 * ev['resolution']:.2g} %{estimate_text(ev.get('increment_estimate'))}"
                      if ev["decision"] == "supported" else "")
            assert f"{ev['decision']}{within} {ev['line']} {ev['tally']}" in page_text(row)
        heads = [unescape(h) for h in re.findall(r"<h3[^>]*>(.*?)</h3>", secs[o["optimizer"]])
                 if h.startswith(m["model"])]
        assert m["supported"] and heads == [f"{m['model']}: " + ", ".join(   # the heading states the resolution too
            f"{g} (to within {100 * m['evidence'][g]['resolution']:.2g} %"
            f"{estimate_text(m['evidence'][g].get('increment_estimate'))})" for g in m["supported"])]


def test_a_figure_per_model_and_dataset(report):
    outs, folder = report
    secs = sections((folder / "index.html").read_text())
    for o in outs:
        (m,) = o["models"]
        assert secs[o["optimizer"]].count("<svg") == m["datasets"] == 2
    svgs = sorted(p.name for p in (folder / "figures").glob("*.svg"))
    assert svgs == [f"bias-{i}-{o}-linear-{k}.svg" for i, o in ((1, "nsd-l2"), (2, "signum")) for k in (1, 2)]


def test_csv_values_are_the_json_series(report):
    """Each figure's CSV holds, per geometry, the curve of the JSON output: the same steps and values, exactly."""
    outs, folder = report
    for i, o in enumerate(outs, start=1):
        (m,) = o["models"]
        tags = [d["dataset"] for d in m["evidence"]["l2"]["datasets"]]
        for k, tag in enumerate(tags, start=1):
            with open(folder / "figures" / f"bias-{i}-{o['optimizer']}-linear-{k}.csv") as f:
                rows = list(csv.reader(f))
            assert rows[0] == ["series", "step", "1 − γ/γ*"]
            got: dict[str, list] = {}
            for g, x, y in rows[1:]:
                got.setdefault(g, []).append((int(x), float(y)))
            for g, ev in m["evidence"].items():
                (d,) = [d for d in ev["datasets"] if d["dataset"] == tag]
                assert got[g] == list(zip(d["curve"]["steps"], d["curve"]["values"], strict=True))
                assert d["curve"]["values"][-1] == d["margin_gap"]   # the judged value is the curve's last point


def test_provenance_names_seed_tier_knobs_and_code(report):
    _, folder = report
    html = (folder / "index.html").read_text()
    prov = html[html.index('<section id="provenance"'):html.index("</section>")]
    text = page_text(prov)
    assert f"seed {SEED}" in text and "tier smoke" in text
    assert "command ibverify bias --optimizer nsd-l2 --optimizer signum" in text and "--lr-decay 0.5" in text
    assert text.count("knobs given lr_decay = 0.5") == 2                      # each optimizer's knobs given
    assert "lr = 0.1" in text and "batch_size = " in text                     # and resolved on the model
    assert re.search(r"ibverify \S+ ,? ?(commit [0-9a-f]{40}|\(not from a git checkout\))", text)
    assert re.search(r"created \d{4}-\d\d-\d\dT", text)
    saved = json.loads((folder / "bias.json").read_text())
    assert saved["provenance"]["seed"] == SEED and saved["provenance"]["tier"] == "smoke"


def test_a_user_file_is_named_with_its_sha256(tmp_path):
    """The report page from an answer with a user file: its path and sha256 in the provenance (no run needed)."""
    from ibverify.report.bias import render_bias_report

    answer = {"optimizer": "mine", "knobs": {}, "tier": "smoke", "seed": 0, "skipped": {}, "models": [],
              "source": "/x/my.py:make", "source_sha256": "ab" * 32}
    prov = {"command": "ibverify bias --optimizer /x/my.py", "ibverify": "0", "commit": "", "dirty": None,
            "created": "2026-01-01T00:00:00Z", "tier": "smoke", "seed": 0, "datasets": 1, "data": None,
            "ran_on": "this process", "versions": {}}
    text = page_text(render_bias_report([answer], tmp_path / "r", prov).read_text())
    assert "source /x/my.py:make" in text and "source sha256 " + "ab" * 32 in text


def comparable(out: dict) -> str:
    """An answer without CPU seconds (the only figure that depends on where it ran)."""
    out = {**out, "models": [{k: v for k, v in m.items() if k != "cpu_seconds"} for m in out["models"]]}
    return json.dumps(out, sort_keys=True)


@pytest.fixture(scope="module")
def client():
    """A Dask cluster of two single-threaded workers in this process (cheap: no process starts)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as c:
        yield c


def test_two_optimizers_on_dask_equal_two_sequential_runs(client):
    specs = [OptimizerSpec("nsd-l2"), OptimizerSpec("signum")]
    kw = dict(tier="smoke", seed=0, datasets=2, models=["linear"])
    alone = [identify_all([s], **kw)[0] for s in specs]
    on_dask = identify_all(specs, client=client, **kw)
    assert [comparable(o) for o in on_dask] == [comparable(o) for o in alone]
    assert [o["models"][0]["supported"] for o in on_dask] == [["l2"], ["linf"]]
    assert on_dask[0]["models"][0]["evidence"]["l2"]["datasets"][0]["curve"]["values"]


def test_a_failed_task_is_one_error_line(client, monkeypatch):
    """A task that fails on Dask (here: raises; a worker killed too often alike) ends the command with one
    IbverifyError line naming the optimizer, model and dataset, not a traceback."""
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(bias, "judge_problem", broken)   # the workers run in this process
    with pytest.raises(IbverifyError, match=r"nsd-l2, linear model, dataset .*: the Dask task failed: "
                                            r"RuntimeError: boom"):
        identify_all([OptimizerSpec("nsd-l2")], client=client, tier="smoke", seed=0, datasets=1, models=["linear"])


@pytest.mark.parametrize("extra, text", [
    (["--optimizer", "nsd-l2", "--optimizer", "nope"], "unknown optimizer 'nope'"),
    (["--optimizer", "nsd-l2", "--workers", "0"], "--workers must be >= 1"),
    (["--optimizer", "nsd-l2", "--report", "{file}/r"], "cannot write there"),
    (["--optimizer", "nsd-l2", "--report", "{verify}"], "holds an `ibverify verify` report"),
])
def test_bad_input_is_one_line_and_exit_2(extra, text, tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "results.json").write_text("{}")
    extra = [a.format(file=tmp_path / "a-file", verify=tmp_path / "verify") for a in extra]
    rc, out, err = run_cli(["bias", *extra, *RUN, "-q"], capsys)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and text in err and "Traceback" not in err


def test_the_answer_is_judged_once_per_dataset():
    """identify's judge hook sees each (model, dataset) once, with the optimizer's spec: the Dask path's unit."""
    seen = []

    def judge(model, pr, spec):
        seen.append((model, pr.tag, spec.name))
        return bias.judge_problem(model, pr, spec, "smoke")

    out = bias.identify(OptimizerSpec("nsd-l2"), tier="smoke", datasets=1, models=["linear"], judge=judge)
    assert [(m, name) for m, _, name in seen] == [("linear", "nsd-l2")]
    assert out["models"][0]["supported"] == ["l2"]
