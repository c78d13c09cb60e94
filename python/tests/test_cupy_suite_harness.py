"""scripts/cupy_suite.py without a GPU: the import rewriting (only import lines change), the
user-kernel suite's scope, the parametrization-free keys, and a run of synthetic test files
through the recording plugin (a crashing test is recorded and the rest of its file still
runs)."""

import importlib.util
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("cupy_suite", _ROOT / "scripts" / "cupy_suite.py")
cupy_suite = importlib.util.module_from_spec(_spec)
sys.modules["cupy_suite"] = cupy_suite
_spec.loader.exec_module(cupy_suite)


def test_only_import_lines_are_rewritten():
    src = (
        "import numpy\n"
        "import cupy\n"
        "import cupy  # NOQA\n"
        "import cupy._core._accelerator as _acc\n"
        "from cupy import testing\n"
        "from cupyx import jit\n"
        "    import cupy\n"
        "x = 'import cupy'\n"
        "y = cupy.fuse(lambda a: a)  # import cupy\n"
        "def f():\n"
        "    return cupy.sum(x)\r\n"
    )
    out = cupy_suite.rewrite_source(src).splitlines(keepends=True)
    assert out == [
        "import numpy\n",
        "import _pydevice_cupy as cupy\n",
        "import _pydevice_cupy as cupy  # NOQA\n",
        "import cupy._core._accelerator as _acc\n",
        "from cupy import testing\n",
        "from pydevice.cupyx import jit\n",
        "    import _pydevice_cupy as cupy\n",
        "x = 'import cupy'\n",
        "y = cupy.fuse(lambda a: a)  # import cupy\n",
        "def f():\n",
        "    return cupy.sum(x)\r\n",
    ]


def test_base_key_strips_parametrization():
    k = cupy_suite.base_key
    assert k("a/t.py::TestX_param_3_{value=-1}::test_y[float32-2]") == "a/t.py::TestX::test_y"
    assert k("a/t.py::test_z[1]") == "a/t.py::test_z"


def test_user_kernel_scope_is_the_python_bodied_tests():
    src = '''
import cupy

class Base:
    def kernel(self):
        return cupy.ReductionKernel('T x', 'T y', 'x', 'a + b', 'y = a', '0', 'my_sum')

    def check(self):
        return self.kernel()


class TestA(Base):
    def test_through_helpers(self):
        self.check()

    def test_cxx(self):
        cupy.ElementwiseKernel('T x', 'T y', 'y = x;')

    def test_cxx_declaration(self):
        cupy.ElementwiseKernel('T x', 'T y', 'T t = x; y = t')

    def test_python(self):
        cupy.ElementwiseKernel('T x, T y', 'T z', """
            z = x + y
        """)

    def test_no_kernel(self):
        pass


def test_raw_module():
    cupy.RawKernel('extern "C" __global__ void k() {}', 'k')
'''
    assert cupy_suite.python_bodied_tests(src) == {"TestA::test_through_helpers", "TestA::test_python"}


def test_exclusions_have_reasons():
    for key, (suite, reason) in cupy_suite.EXCLUDED.items():
        assert suite in cupy_suite.SUITES and key.count("::") >= 1 and len(reason) > 20


def test_a_crashing_test_is_recorded_and_the_file_goes_on(tmp_path):
    side = tmp_path / "cupy"
    side.mkdir()
    (side / "_cupy_suite_plugin.py").write_text(cupy_suite.PLUGIN)
    (side / "test_x.py").write_text(
        "import os, pytest\n"
        "def test_ok():\n    pass\n"
        "def test_crash():\n    os.abort()\n"
        "def test_fail():\n    raise ValueError('bad value\\nsecond line')\n"
        "def test_skip():\n    pytest.skip('no')\n"
        "def test_after():\n    pass\n"
    )
    out = tmp_path / "out"
    res = cupy_suite.run_file(side, "test_x.py", out, timeout=120, python=sys.executable)
    assert res["test_x.py::test_ok"] == ("passed", "")
    assert res["test_x.py::test_crash"][0] == "failed"
    assert res["test_x.py::test_crash"][1].startswith("Crash: the test crashed")
    assert res["test_x.py::test_fail"] == ("failed", "ValueError: bad value")
    assert res["test_x.py::test_skip"][0] == "skipped"
    assert res["test_x.py::test_after"] == ("passed", "")
    assert any(out.joinpath("junit").iterdir())


def test_summary_counts_over_what_cupy_passes():
    cupy_res = {"f.py::T::a": ("passed", ""), "f.py::T::b": ("passed", ""),
                "f.py::T::c": ("failed", "X: y"), "f.py::T::d": ("skipped", "")}
    pyd_res = {"f.py::T::a": ("passed", ""), "f.py::T::b": ("failed", "TypeError: nope"),
               "f.py::T::c": ("passed", "")}
    md = []
    fig = cupy_suite.summarize("fuse", ["f.py"], cupy_res, pyd_res, None, md)
    assert (fig["cupy_passes"], fig["pydevice_passes"], fig["in_scope"]) == (2, 1, 4)
    text = "\n".join(md)
    assert "**1 passed, 1 failed** over the 2 tests CuPy passes" in text
    assert "| 1 | `TypeError: nope` |" in text


def test_a_file_runs_in_parts_one_per_class(tmp_path):
    src = (
        "class TestA:\n    def test_x(self):\n        pass\n"
        "class TestAB:\n    def test_y(self):\n        pass\n"
        "def test_free():\n    pass\n"
    )
    parts = cupy_suite.file_parts(src)
    assert parts == ["TestA and not TestAB", "TestAB", "not TestA and not TestAB"]
    assert cupy_suite.file_parts("class TestOnly:\n    pass\n") == [None]
    side = tmp_path / "cupy"
    side.mkdir()
    (side / "_cupy_suite_plugin.py").write_text(cupy_suite.PLUGIN)
    (side / "test_p.py").write_text(src + "class TestA_param_0_x(TestA):\n    pass\n")
    got = {}
    for sel in parts:
        got.update(cupy_suite.run_file(side, "test_p.py", tmp_path / "out", 120, sys.executable, sel))
    assert sorted(got) == ["test_p.py::TestA::test_x", "test_p.py::TestAB::test_y",
                           "test_p.py::TestA_param_0_x::test_x", "test_p.py::test_free"]


def test_files_are_collected_and_run_in_chunks_of_node_ids(tmp_path):
    side = tmp_path / "cupy"
    side.mkdir()
    (side / "_cupy_suite_plugin.py").write_text(cupy_suite.PLUGIN)
    (side / "test_c.py").write_text(
        "import pytest\n@pytest.mark.parametrize('n', range(5))\ndef test_n(n):\n    assert n != 3\n")
    ids = cupy_suite.collect(side, "test_c.py", sys.executable)
    assert ids == [f"test_c.py::test_n[{n}]" for n in range(5)]
    parts = cupy_suite.chunks(ids, 2)
    assert [len(p) for p in parts] == [2, 2, 1]
    got = {}
    for p in parts:
        got.update(cupy_suite.run_file(side, "test_c.py", tmp_path / "out", 120, sys.executable, p))
    assert got["test_c.py::test_n[3]"][0] == "failed" and got["test_c.py::test_n[3]"][1].startswith("AssertionError")
    assert sum(o == "passed" for o, _ in got.values()) == 4


def test_jit_tests_keep_import_cupy():
    # The cupyx.jit tests use `cupy` only for arrays and constants: their kernels read
    # `cupy.inf` / `cupy.int32` from the module a user's would (docs/semantics.md §15.4.1).
    src = "import cupy\nfrom cupyx import jit\n"
    assert cupy_suite.rewrite_source(src, keep_cupy=True) == "import cupy\nfrom pydevice.cupyx import jit\n"
    assert cupy_suite.rewrite_source(src).startswith("import _pydevice_cupy as cupy\n")
