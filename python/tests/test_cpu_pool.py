"""The CPU back end's worker pools (docs/semantics.md §22.1): threads persist across
launches, and a process forked after a CPU launch (Python's multiprocessing on Linux) makes
pools of its own instead of waiting on its parent's threads, which it does not have. No GPU
needed."""

import os
import sys
import time

import numpy as np
import pytest

from cuda import device


@device.kernel
def twice(x, out):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < x.shape[0]:
        out[i] = x[i] * 2


def _run(threads):
    x = np.arange(4096, dtype=np.float32)
    out = np.zeros_like(x)
    twice._launch_cpu((x, out), 16, 256, 0, None, threads=threads)
    return np.array_equal(out, x * 2)


def test_launches_reuse_the_pool_and_agree():
    for threads in (1, 2, 3, 2, 1):
        assert _run(threads)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_launches_on_pools_of_its_own():
    assert _run(2)  # the parent's pool of two workers exists now
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if _run(2) and _run(3) else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's CPU launch hung (it waited on its parent's worker threads)")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
