"""Kernel variants (one closure compiled per tuple of constants, kernels.jit_variant) each have a qualified name of
their own, so each has its own numba cache index. With one shared name, processes compiling different variants at
once (pytest -n auto, Dask workers, a claim run beside a `bias` run) wrote one index and its data files in turn, and
a later process loaded one variant's machine code for another: Signum ran the Adam kernel (seen once: 0.4 relative
error against the reference, caught by test_engine's compiled-vs-reference test)."""

from ibverify.engine import kernels, network


def test_every_kernel_variant_has_a_name_of_its_own():
    for variants in (kernels.MOMENT_CHUNKS, network._ADVANCE):
        names = [d.py_func.__qualname__ for d in variants.values()]
        assert len(set(names)) == len(names) == len(variants), names
    steps = {d.py_func.__qualname__ for d in (kernels._make_moment_step(True), kernels._make_moment_step(False))}
    assert len(steps) == 2


def test_a_variant_name_encodes_its_constants():
    def f(x):
        return x
    d = kernels.jit_variant(f, (True, 2, False))
    assert d.py_func.__qualname__ == "f_v1_2_0" and d(3.0) == 3.0
