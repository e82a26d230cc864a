"""runner.torchloop: a torch optimizer's linear-model run with the loop in torch equals the engine's reference run
(to rounding: the engine adds the torch step to its own float64 w), with the same checkpoints, diagnostics and error
line; `bias` makes torch runs there (ForeignStore) and every other run as RunStore does."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ibverify import IbverifyError  # noqa: E402
from ibverify.engine import run as engine_run  # noqa: E402
from ibverify.optim.adapters import to_spec  # noqa: E402
from ibverify.recipes import bias as recipes  # noqa: E402
from ibverify.checks import bias as checks_bias  # noqa: E402
from ibverify.runner import torchloop  # noqa: E402
from ibverify.runner.underflow import failed_step  # noqa: E402


def data(n=8, d=4, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z[:, 0] = np.abs(Z[:, 0]) + 0.5   # separable along e1
    return Z


@pytest.mark.parametrize("name, knobs", [
    ("torch:Adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}),
    ("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0}),
    ("torch:Adagrad", {"lr": 0.1, "lr_decay": 0.0}),
    ("torch:SGD", {"lr": 0.5, "lr_decay": 0.0, "batch_size": 3, "order": "reshuffle"}),
])
def test_the_torch_loop_equals_the_engines_reference_run(name, knobs):
    spec = to_spec(name, knobs, probe=False)
    Z = data()
    ref = engine_run(Z, spec, 2000, checkpoints=20)
    mine = torchloop.run(Z, spec, 2000, 20)
    assert ref.engine == mine.engine == "reference" and mine.horizon == ref.horizon == 2000
    assert np.array_equal(mine.checkpoints, ref.checkpoints)
    scale = np.max(np.abs(ref.ws))
    assert scale > 0.5 and np.max(np.abs(mine.ws - ref.ws)) <= 1e-12 * scale
    assert mine.diagnostics == ref.diagnostics


def test_a_non_finite_iterate_is_the_engines_line():
    spec = to_spec("torch:SGD", {"lr": 1e308, "lr_decay": 0.0}, probe=False)
    with pytest.raises(IbverifyError, match="non-finite iterate by step") as e:
        torchloop.run(data() * 1e10, spec, 100, 5)
    assert failed_step(e.value) == 1


def test_only_torch_optimizers_are_eligible():
    assert torchloop.eligible(to_spec("torch:Adam", {}, probe=False))
    assert not torchloop.eligible(to_spec("adam", {}, probe=False))
    assert not torchloop.eligible(to_spec("signum", {}, probe=False))


def test_the_foreign_store_makes_torch_runs_in_the_loop_and_others_in_the_engine(monkeypatch):
    store = torchloop.ForeignStore()
    made = []
    real = torchloop.run
    monkeypatch.setattr(torchloop, "run", lambda *a, **k: made.append(a[1].name) or real(*a, **k))
    pr = checks_bias.generated("linear", 0, 1, store=store)[0]
    dr, n = pr.data, pr.n
    sgd = to_spec("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0}, probe=False).resolved(n)
    gd = to_spec("gd", {"lr": 0.1, "lr_decay": 0.0}, probe=False).resolved(n)
    a = store.run(recipes.run_recipe(dr, None, None, sgd, 500))
    b = store.run(recipes.run_recipe(dr, None, None, gd, 500))
    assert made == [sgd.name] and a.engine == "reference" and b.engine == "compiled"
    assert store.run(recipes.run_recipe(dr, None, None, sgd, 500)) is a and made == [sgd.name]   # made once
    ref = engine_run(store.data(dr).Z, sgd, 500, checkpoints=recipes.run_recipe(dr, None, None, sgd, 500).checkpoints)
    assert np.max(np.abs(a.ws - ref.ws)) <= 1e-12 * np.max(np.abs(ref.ws))


@pytest.mark.parametrize("name, knobs", [
    ("torch:Adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}),
    ("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0}),
    ("torch:Adagrad", {"lr": 0.1, "lr_decay": 0.0}),
    ("torch:SGD", {"lr": 0.5, "lr_decay": 0.3, "batch_size": 3, "order": "replacement"}),
])
def test_an_extension_continues_the_shorter_run_bit_identically(name, knobs):
    spec = to_spec(name, knobs, probe=False)
    Z = data()
    short = torchloop.run(Z, spec, 1000, recipes.checkpoints(1000))   # bias's checkpoints: 4 a decade, nested
    whole = torchloop.run(Z, spec, 10000, recipes.checkpoints(10000))
    longer = torchloop.run(Z, spec, 10000, recipes.checkpoints(10000), extend=short)
    assert longer.final_state["continued_from"] == 1000 and whole.final_state["continued_from"] == 0
    assert longer.final_state["t"] == 10000 and short.final_state["t"] == 1000
    assert np.array_equal(longer.checkpoints, whole.checkpoints)
    assert np.array_equal(longer.ws, whole.ws)                       # the same bits as from step 0
    assert longer.diagnostics == whole.diagnostics
    assert np.array_equal(short.ws, torchloop.run(Z, spec, 1000, recipes.checkpoints(1000)).ws)  # untouched


def test_an_extension_that_cannot_continue_starts_at_step_0(monkeypatch):
    spec = to_spec("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0}, probe=False)
    Z = data()
    cps = np.asarray(recipes.checkpoints(10000))
    short = torchloop.run(Z, spec, 1000, 7)   # its checkpoints are not those of the longer run below 1000
    assert torchloop._continue([short], short.final_state["identity"], cps, np.empty((len(cps), 1, 4))) is None
    other = torchloop.run(Z * 2, spec, 1000, recipes.checkpoints(1000))   # other data
    ok = torchloop.run(Z, spec, 1000, recipes.checkpoints(1000))
    assert torchloop._continue([other], ok.final_state["identity"], cps, np.empty((len(cps), 1, 4))) is None
    assert torchloop._continue([ok], ok.final_state["identity"], cps[:3], np.empty((3, 1, 4))) is None   # longer
    got = torchloop._continue([ok], ok.final_state["identity"], cps, np.empty((len(cps), 1, 4)))
    assert got is not None and got["j"] == int(np.sum(cps <= 1000)) and got["t"] == 1000
    for prev in (short, other):
        again = torchloop.run(Z, spec, 10000, cps, extend=prev)
        assert again.final_state["continued_from"] == 0
        assert np.array_equal(again.ws, torchloop.run(Z, spec, 10000, cps).ws)


def test_the_step_without_torchs_wrapper_is_the_same_bits_and_a_hook_keeps_the_wrapper():
    spec = to_spec("torch:Adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}, probe=False)
    Z = data()
    fast = torchloop.run(Z, spec, 1500, 9)
    p = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.1)
    assert torchloop._step_of(opt).__name__ == "<lambda>"
    seen = []
    from torch.optim.optimizer import register_optimizer_step_pre_hook
    h = register_optimizer_step_pre_hook(lambda *a: seen.append(1))
    try:
        assert torchloop._step_of(opt) == opt.step
        hooked = torchloop.run(Z, spec, 1500, 9)
    finally:
        h.remove()
    assert len(seen) == 1500 and np.array_equal(hooked.ws, fast.ws)
    own = opt.register_step_post_hook(lambda *a: None)
    assert torchloop._step_of(opt) == opt.step
    own.remove()


def test_a_non_finite_iterate_late_in_a_chunk_is_named_at_its_own_step():
    spec = to_spec("torch:SGD:maximize=True", {"lr": 1e305, "lr_decay": 0.0}, probe=False)   # ascends: |w| ~ t·lr
    with pytest.raises(IbverifyError, match="non-finite iterate by step") as e:
        torchloop.run(data(), spec, 3000, 5)
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            pytest.raises(IbverifyError, match="non-finite iterate by step") as ref:
        warnings.simplefilter("ignore")
        engine_run(data(), spec, 3000, checkpoints=5)
    assert failed_step(e.value) == failed_step(ref.value)
    assert torchloop.CHUNK < failed_step(e.value) < 2 * torchloop.CHUNK   # inside the second chunk (measured: 1480)


def shapes(sizes=((12, 6), (14, 8), (14, 9)), seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for n, d in sizes:
        Z = rng.normal(size=(n, d))
        Z[:, 0] = np.abs(Z[:, 0]) + 0.5
        out.append(Z)
    return out


@pytest.mark.parametrize("name, knobs, sizes", [
    ("torch:Adagrad", {"lr": 0.1, "lr_decay": 0.0}, ((12, 6), (14, 8), (14, 9))),        # padded rows and columns
    ("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.3, "batch_size": 3, "order": "reshuffle"},
     ((12, 5), (9, 5))),
    ("torch:Adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}, ((10, 4), (13, 4), (8, 4))),
])
def test_stacked_runs_are_the_single_runs_bit_for_bit(name, knobs, sizes):
    spec = to_spec(name, knobs, probe=False)
    Zs = shapes(sizes)
    cps = recipes.checkpoints(3000)
    many = torchloop.run_many(Zs, [spec] * len(Zs), 3000, cps)
    for Z, got in zip(Zs, many, strict=True):
        one = torchloop.run(Z, spec, 3000, cps)
        assert got.ws.shape == one.ws.shape == (len(cps), Z.shape[1])
        assert np.array_equal(got.ws, one.ws) and got.diagnostics == one.diagnostics
        assert got.spec == one.spec and got.spec.batch_size == one.spec.batch_size
    longer = torchloop.run_many(Zs, [spec] * len(Zs), 30000, recipes.checkpoints(30000), extend=many)
    assert longer[0].final_state["continued_from"] == 3000
    for Z, got in zip(Zs, longer, strict=True):
        assert np.array_equal(got.ws, torchloop.run(Z, spec, 30000, recipes.checkpoints(30000)).ws)


def test_what_cannot_be_stacked_is_refused():
    mixed = [to_spec("torch:SGD:momentum=0.9", {}, probe=False), to_spec("torch:SGD:momentum=0.5", {}, probe=False)]
    with pytest.raises(IbverifyError, match="elementwise"):
        torchloop.run_many(shapes(((10, 4), (10, 4))), mixed, 100, 5)
    assert torchloop.stackable(to_spec("torch:Adagrad", {}, probe=False))
    assert not torchloop.stackable(to_spec("torch:LBFGS", {}, probe=False))
    assert not torchloop.stackable(to_spec("adagrad", {}, probe=False))


def plain_torch_run(Z, name, knobs, steps, cps):
    """The run as a plain loop of torch's own optimizer would make it: full batch, the engine's gradient formula
    written in torch (log(1 + e^q) as the loop computes it), lr·t^(−lr_decay) set before each step, opt.step()."""
    spec = to_spec(name, knobs, probe=False).resolved(len(Z))
    cls, kwargs, _ = spec.user.user._made
    live = np.flatnonzero(np.any(Z != 0, axis=0))
    Zt = torch.tensor(Z[:, live])
    p = torch.zeros(len(live), dtype=torch.float64, requires_grad=True)
    opt = cls([p], lr=float(spec.lr), **kwargs)
    out = np.zeros((len(cps), Z.shape[1]))
    for t in range(1, int(cps[-1]) + 1):
        with torch.no_grad():
            q = Zt @ p
            e = torch.exp(-(torch.clamp(q, min=0.0) + torch.log1p(torch.exp(-q.abs()))))
            p.grad = -(e[:, None] * Zt).sum(0) / len(Z)
        opt.param_groups[0]["lr"] = float(spec.lr) * float(t) ** (-float(spec.lr_decay))
        opt.step()
        for j in np.flatnonzero(cps == t):
            out[j, live] = p.detach().numpy()
    return out


def test_adam_at_eps_zero_stacks_datasets_of_other_feature_counts_and_zero_columns():
    # a padded or zero column of one row is 0/0 = NaN under Adam at ε = 0: it stays out of that row's run
    Zs = shapes(((12, 6), (14, 8), (14, 9)))
    Zs[2][:, 4] = 0.0   # a zero column of the third dataset only
    knobs = {"lr": 0.01, "lr_decay": 0.5}
    spec = to_spec("torch:Adam:eps=0", knobs, probe=False)
    cps = np.asarray(recipes.checkpoints(3000))
    many = torchloop.run_many(Zs, [spec] * 3, 3000, cps)
    for Z, got in zip(Zs, many, strict=True):
        one = torchloop.run(Z, spec, 3000, cps)
        assert np.isfinite(got.ws).all() and np.array_equal(got.ws, one.ws) and got.diagnostics == one.diagnostics
        plain = plain_torch_run(Z, "torch:Adam:eps=0", knobs, 3000, cps)   # torch's own optimizer, a plain loop
        assert np.max(np.abs(plain)) > 0.5 and np.max(np.abs(got.ws - plain)) <= 1e-12 * np.max(np.abs(plain))
    assert np.all(many[2].ws[:, 4] == 0.0) and np.all(many[2].ws[-1, [0, 1, 2, 3, 5]] != 0.0)
    longer = torchloop.run_many(Zs, [spec] * 3, 30000, recipes.checkpoints(30000), extend=many)
    assert longer[0].final_state["continued_from"] == 3000
    for Z, got in zip(Zs, longer, strict=True):   # continued: one long run's bits
        whole = torchloop.run(Z, spec, 30000, recipes.checkpoints(30000))
        assert np.array_equal(got.ws, whole.ws) and got.diagnostics == whole.diagnostics


def test_the_store_makes_a_stack_at_its_first_request_and_extends_it_whole(monkeypatch):
    store = torchloop.ForeignStore()
    calls = []
    real = torchloop.run_many
    monkeypatch.setattr(torchloop, "run_many", lambda Zs, *a, **k: calls.append((len(Zs), a[1])) or real(Zs, *a, **k))
    prs = checks_bias.generated("linear", 0, 3, store=store)
    spec = to_spec("torch:Adagrad", {"lr": 0.1, "lr_decay": 0.0}, probe=False)
    first = [recipes.run_recipe(pr.data, None, None, spec.resolved(pr.n), 1000) for pr in prs]
    store.stack(first)
    a = store.run(first[1])
    assert calls == [(3, 1000)]
    b, c = store.run(first[0]), store.run(first[2])
    assert calls == [(3, 1000)]                                      # made together, once
    assert np.array_equal(a.ws, real([store.data(prs[1].data).Z], [first[1].spec], 1000, first[1].checkpoints)[0].ws)
    later = recipes.run_recipe(prs[2].data, None, None, first[2].spec, 10000)
    ext = store.run(later)
    assert calls[1:] == [(3, 10000)] and ext.final_state["continued_from"] == 1000
    assert np.array_equal(ext.ws, real([store.data(prs[2].data).Z], [first[2].spec], 10000, later.checkpoints)[0].ws)
    store.run(recipes.run_recipe(prs[0].data, None, None, first[0].spec, 10000))
    assert len(calls) == 2 and b is not c
    both = torchloop.ForeignStore()                                  # Adam at eps 0 on other feature counts too
    adam = to_spec("torch:Adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}, probe=False)
    both.stack([recipes.run_recipe(pr.data, None, None, adam.resolved(pr.n), 500) for pr in prs])
    assert len({both.data(pr.data).Z.shape[1] for pr in prs}) > 1
    assert len(both._stacks) == 3 and {len(v) for v in both._stacks.values()} == {3}


@pytest.mark.parametrize("name", ["torch:Adam:eps=0", "torch:Adagrad"])
def test_the_loop_in_inference_mode_is_no_grads_bits(name, monkeypatch):
    spec = to_spec(name, {"lr": 0.01, "lr_decay": 0.5}, probe=False)
    Zs = shapes(((12, 6), (14, 8)))
    fast = torchloop.run_many(Zs, [spec] * 2, 2000, recipes.checkpoints(2000))
    on = torchloop.run_many(Zs, [spec] * 2, 20000, recipes.checkpoints(20000), extend=fast)
    monkeypatch.setattr(torchloop, "loop_mode", lambda cls: torch.no_grad())
    plain = torchloop.run_many(Zs, [spec] * 2, 2000, recipes.checkpoints(2000))
    for a, b in zip(fast + on, plain + torchloop.run_many(Zs, [spec] * 2, 20000, recipes.checkpoints(20000),
                                                          extend=plain), strict=True):
        assert np.array_equal(a.ws, b.ws) and a.diagnostics == b.diagnostics
    assert not torch.is_inference_mode_enabled() and on[0].final_state["continued_from"] == 2000


def test_inference_mode_is_for_torch_optims_own_classes():
    class Own(torch.optim.SGD):
        pass

    with torchloop.loop_mode(torch.optim.Adam):
        assert torch.is_inference_mode_enabled()
    with torchloop.loop_mode(Own):
        assert not torch.is_inference_mode_enabled() and not torch.is_grad_enabled()


def test_stalled_steps_of_a_stacked_row_are_its_own_runs_and_survive_an_extension():
    # at lr 100 the margins jump past ≈ 300 in a few steps; then Adam's m̂/√v̂ decays like 0.9^t (the new gradients
    # are ≈ e^−300) and its update falls below half an ulp of w (w + u == w): stalled steps, all but the first few
    # hundred (measured). The padded columns of the smaller rows are NaN (0/0) and must not count.
    spec = to_spec("torch:Adam:eps=0", {"lr": 100.0, "lr_decay": 0.0}, probe=False)
    Zs = shapes(((12, 6), (14, 8), (14, 9)))
    short = torchloop.run_many(Zs, [spec] * 3, 1000, recipes.checkpoints(1000))
    longer = torchloop.run_many(Zs, [spec] * 3, 10000, recipes.checkpoints(10000), extend=short)
    whole = torchloop.run_many(Zs, [spec] * 3, 10000, recipes.checkpoints(10000))
    for i, Z in enumerate(Zs):
        one = torchloop.run(Z, spec, 10000, recipes.checkpoints(10000))
        assert whole[i].diagnostics == one.diagnostics and np.array_equal(whole[i].ws, one.ws)
        assert 9000 < one.diagnostics["stalled_steps"] == one.diagnostics["stalled_streak"] < 10000
        assert 0 < short[i].diagnostics["stalled_steps"] < one.diagnostics["stalled_steps"]
        assert longer[i].final_state["continued_from"] == 1000 and longer[i].diagnostics == whole[i].diagnostics
