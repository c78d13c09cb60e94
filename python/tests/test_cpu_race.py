"""The CPU back end's race detector (docs/semantics.md §22): ``race_check=True`` (or
``PYDEVICE_RACECHECK=1``) on a CPU launch raises RaceError for two accesses by different
threads to the same byte of shared or global memory with no barrier between them, one a
store, naming both Python lines; kernels whose threads meet only across barriers or through
atomics pass. No GPU needed."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cuda import device

SOURCE = textwrap.dedent(
    """
    from cuda import device
    from cuda.device import float32


    @device.kernel
    def rotate(x, out):
        tile = device.shared_array(256, float32)
        t = device.thread_idx.x
        tile[t] = x[t]                                  # line 10
        out[t] = tile[(t + 1) % device.block_dim.x]     # line 11: no barrier before it


    @device.kernel
    def rotate_synced(x, out):
        tile = device.shared_array(256, float32)
        t = device.thread_idx.x
        i = device.tid(1)
        tile[t] = x[i]
        device.syncthreads()
        v = tile[(t + 1) % device.block_dim.x]
        device.syncthreads()
        tile[t] = v
        device.syncthreads()
        out[i] = tile[(t + 1) % device.block_dim.x]


    @device.kernel
    def block_sums(x, total):
        # Every block adds its sum into total[0] without an atomic: a race between blocks.
        i = device.tid(1)
        if device.thread_idx.x == 0:
            s = float32(0)
            for k in range(device.block_dim.x):
                s += x[i + k]
            total[0] = total[0] + s                     # line 36


    @device.kernel
    def block_sums_atomic(x, total):
        i = device.tid(1)
        if device.thread_idx.x == 0:
            s = float32(0)
            for k in range(device.block_dim.x):
                s += x[i + k]
            device.atomic_ref(total, 0).add(s)
    """
)


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    d = tmp_path_factory.mktemp("cpu_race")
    (d / "race_kernels.py").write_text(SOURCE)
    sys.path.insert(0, str(d))
    try:
        import race_kernels

        yield race_kernels
    finally:
        sys.path.remove(str(d))


@pytest.mark.parametrize("deterministic", [False, True])
def test_a_shared_memory_race_names_both_lines(mod, deterministic):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    with pytest.raises(device.RaceError) as info:
        device.launch(
            mod.rotate, x, out, grid=2, block=256, backend="cpu", race_check=True, deterministic=deterministic
        )
    e = info.value
    assert e.space == "shared" and e.kernel == "rotate"
    assert sorted(e.lines) == [10, 11]
    assert e.first.write != e.second.write
    assert e.first.thread != e.second.thread and e.first.block == e.second.block
    assert e.file.endswith("race_kernels.py")
    assert "race_kernels.py:10:" in str(e) and "race_kernels.py:11:" in str(e)
    # Without the check the launch runs (and, on this schedule, happens to read the stores).
    device.launch(mod.rotate, x, out, grid=2, block=256, backend="cpu")


def test_deterministic_reports_are_reproducible(mod):
    x = np.arange(256, dtype=np.float32)
    reports = []
    for _ in range(3):
        with pytest.raises(device.RaceError) as info:
            device.launch(mod.rotate, x, np.zeros(256, np.float32), grid=1, block=256, backend="cpu",
                          race_check=True, deterministic=True)
        reports.append(str(info.value))
    assert reports[0] == reports[1] == reports[2]


def test_correct_kernels_with_barriers_or_atomics_are_not_reported(mod):
    rng = np.random.default_rng(3)
    x = rng.random(256 * 4, dtype=np.float32)
    out = np.zeros_like(x)
    for deterministic in (False, True):
        device.launch(mod.rotate_synced, x, out, grid=4, block=256, backend="cpu", race_check=True,
                      deterministic=deterministic)
        want = np.concatenate([np.roll(np.roll(b, -1), -1) for b in x.reshape(4, 256)])
        np.testing.assert_array_equal(out, want)
    total = np.zeros(1, np.float32)
    device.launch(mod.block_sums_atomic, x, total, grid=4, block=256, backend="cpu", race_check=True)
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-5)


def test_a_global_memory_race_between_blocks(mod):
    x = np.ones(256 * 4, np.float32)
    with pytest.raises(device.RaceError) as info:
        device.launch(mod.block_sums, x, np.zeros(1, np.float32), grid=4, block=256, backend="cpu",
                      race_check=True, deterministic=True)
    e = info.value
    assert e.space == "global" and e.lines == (36, 36)
    assert e.first.write and e.second.thread == (0, 0, 0)
    assert (e.first.block, e.second.block) == ((0, 0, 0), (1, 0, 0))


def test_race_check_needs_the_cpu_back_end(mod):
    x = np.zeros(256, np.float32)
    with pytest.raises(ValueError, match="CPU back end"):
        device.launch(mod.rotate, x, x.copy(), grid=1, block=256, backend="gpu", race_check=True)


def test_environment_variable_turns_the_check_on(mod, tmp_path):
    code = textwrap.dedent(
        """
        import numpy as np
        import race_kernels as R
        from cuda import device

        try:
            device.launch(R.rotate, np.zeros(256, np.float32), np.zeros(256, np.float32), grid=1, block=256)
        except device.RaceError as e:
            print("race", *sorted(e.lines))
        else:
            print("no race")
        """
    )
    env = dict(os.environ, PYDEVICE_BACKEND="cpu", PYDEVICE_RACECHECK="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(mod.__file__), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["race", "10", "11"]
