"""numba's SSA renaming of locals (docs/semantics.md §2.5.1) on the CPU back end: numba-cuda
code that rebinds a local to a value of another type once its old value is dead runs and
gives NumPy's results. No GPU needed."""

import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(__file__)


def test_reassigned_locals_are_new_variables_on_the_cpu():
    code = textwrap.dedent(
        """
        import numpy as np
        import numba_ssa_kernels as S

        rng = np.random.default_rng(7)
        a = rng.integers(-20, 20, 37).astype(np.int32)
        res = np.zeros((37, 4), np.int64)
        S.vectors_then_longer_vectors[2, 32](a, res)
        x, y, z = a, a + 1, a + 2
        want = np.stack([x * 3 + y, y * 3 + z, x * 9 + y * 3 + z, z * 9 + y * 3 + x], 1)
        np.testing.assert_array_equal(res, want)

        data = rng.random(2)
        r = np.zeros(50)
        S.counter_rebound_to_array[2, 32](r, 6, data)
        i = np.arange(50)
        np.testing.assert_allclose(r, sum(range(1, 6)) + 5 * (data[0] + data[1]) * i)

        f = rng.random(40)
        out = np.full(40, -1.0)
        S.branches_still_unify[1, 64](f, out)
        np.testing.assert_array_equal(out, np.where(f > 0.5, f, 0.0))
        print("ok")
        """
    )
    env = dict(os.environ, PYDEVICE_BACKEND="cpu")
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_to_fixed_tuple_and_run_time_shape_index_on_the_cpu():
    code = textwrap.dedent(
        """
        import numpy as np
        import numba_tuple_kernels as T

        rng = np.random.default_rng(3)
        for shape, rshape in (((5, 7), (1, 7)), ((5, 7), (5, 1)), ((4, 6), (4, 6))):
            rhs = rng.random(rshape)
            lhs = np.zeros(shape)
            T.broadcast_setitem[1, 64](lhs, rhs)
            np.testing.assert_array_equal(lhs, np.broadcast_to(rhs, shape))
        print("ok")
        """
    )
    env = dict(os.environ, PYDEVICE_BACKEND="cpu")
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
