"""ibverify.lazyimport: cvxpy is bound everywhere but executed only when a convex program is built."""

import subprocess
import sys
import types

import pytest

from ibverify.lazyimport import lazy


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_importing_the_package_and_its_geometries_does_not_execute_cvxpy():
    # cvxpy.problems is imported by cvxpy's __init__: present only once cvxpy has really run
    out = _fresh("import sys, ibverify.cli, ibverify.geometry, ibverify.theory.duals, ibverify.oracles.kkt, "
                 "ibverify.engine; print('cvxpy.problems' in sys.modules)")
    assert out == "False"


def test_first_attribute_access_executes_it_and_it_works():
    out = _fresh("import sys; from ibverify.geometry import base; v = base.cp.Variable(2); "
                 "print('cvxpy.problems' in sys.modules, type(v).__name__)")
    assert out == "True Variable"


def test_a_module_already_imported_is_returned_as_it_is():
    assert lazy("types") is types


def test_a_missing_module_is_refused_at_once():
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        lazy("no_such_module_xyz")
