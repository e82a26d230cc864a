"""run_property (ibverify.checks.prop): every evaluated example is kept once, the failing one last."""

from hypothesis import strategies as st

from ibverify import profiles
from ibverify.checks.prop import Example, run_property
from ibverify.claims import CheckContext, Claim


def _ctx(examples: int) -> CheckContext:
    cl = Claim(id="t.prop", paper="", result="", status="paper", statement="", check="",
               tiers={"fast": {}})
    return CheckContext(cl, "fast", {"examples": examples})


def test_passing_property_keeps_every_example():
    profiles.load("ci")
    res = run_property(_ctx(5), st.integers(0, 10**6), lambda x: Example(True, {"x": x}, description=str(x)))
    assert res.holds and res.failing is None and len(res.examples) == 5


def test_failing_example_is_kept_once_and_last():
    profiles.load("ci")
    calls = []

    def evaluate(x):
        calls.append(x)
        return Example(len(calls) < 3, {"x": x}, description=str(x), inputs={"x": x})

    res = run_property(_ctx(10), st.integers(0, 10**6), evaluate)
    assert not res.holds and res.failing is res.examples[-1]
    assert [e.ok for e in res.examples] == [True, True, False]  # no replayed duplicate of the failure
