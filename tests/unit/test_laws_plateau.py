"""baek.beyond.signum-plateau-law pins its exponent (issue 45 item 4): the same claim file stating law_exponent 1.3
instead of 1, judged at the smoke tier on the same runs, must not hold; the claim as committed holds."""

import re
import shutil
from pathlib import Path

from ibverify.claims import default_claims_dir, load_claim
from ibverify.checks.laws import LAW_KEY
from ibverify.runner.claim import run_claim

ID = "baek.beyond.signum-plateau-law"


def _variant(tmp_path: Path, exponent: str) -> Path:
    src = default_claims_dir() / f"{ID}.toml"
    text = src.read_text(encoding="utf-8")
    assert re.search(r"(?m)^law_exponent = 1\.0$", text)
    dst = tmp_path / f"{exponent}" / f"{ID}.toml"
    dst.parent.mkdir()
    shutil.copy(src, dst)
    dst.write_text(re.sub(r"(?m)^law_exponent = 1\.0$", f"law_exponent = {exponent}", text), encoding="utf-8")
    return dst


def test_the_exponent_is_pinned_by_its_interval(tmp_path):
    wrong = run_claim(load_claim(_variant(tmp_path, "1.3")), "smoke")
    law = next(r for r in wrong["outcome"]["table"] if LAW_KEY in r)
    lo, hi = law["interval"]
    assert hi < 1.3 and law["decision"] == "contradicted", law
    assert wrong["verdict"] != "holds" and wrong["outcome"]["holds"] is False
    # the constant-spread half alone would let 1.3 through (the old rule): every dataset supported there
    sets = [r for r in wrong["outcome"]["table"] if "spread (midpoints)" in r]
    assert sets and all(r["decision"] == "supported" for r in sets)
    right = run_claim(load_claim(default_claims_dir() / f"{ID}.toml"), "smoke")   # the same runs, reused
    law1 = next(r for r in right["outcome"]["table"] if LAW_KEY in r)
    assert law1["interval"] == [lo, hi] and lo < 1.0 < hi and 0.7 < lo and hi < 1.3
    assert right["verdict"] == "holds" and law1["decision"] == "supported"
