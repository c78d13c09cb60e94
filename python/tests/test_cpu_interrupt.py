"""Ctrl-C during a launch on the CPU back end (issue 37): SIGINT stops a long kernel promptly
and the launch raises KeyboardInterrupt (or what a user's SIGINT handler raises) instead of
running to its end. The kernel's threads poll the interrupt flag at their loops' back-edges
and no block starts after it (docs/semantics.md §22.1). Each case runs in a subprocess whose
own thread sends it SIGINT while the main thread is inside the native launch. No GPU needed."""

import os
import subprocess
import sys

import pytest

_SCRIPT = """
import os, signal, sys, threading, time
import numpy as np
from cuda import device
from cuda.device import int64

@device.kernel
def spin(a, n: int64):
    # every thread loops n times: minutes for the n below
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    acc = int64(0)
    k = int64(0)
    while k < n:
        acc = acc * 3 + k
        k += 1
    a[i] = acc

@device.kernel
def spin_sync(a, n: int64):
    # barriers in the loop: the threads are fibers that a block barrier switches
    buf = device.shared_array(64, device.int64)
    t = device.thread_idx.x
    k = int64(0)
    buf[t] = int64(0)
    while k < n:
        device.syncthreads()
        buf[t] += k
        k += 1
    a[device.block_idx.x * 64 + t] = buf[t]

mode = sys.argv[1]
if mode == "handler":
    def handler(sig, frame):
        raise RuntimeError("handled")
    signal.signal(signal.SIGINT, handler)

def ctrl_c_after(seconds):
    def send():
        time.sleep(seconds)
        os.kill(os.getpid(), signal.SIGINT)
    th = threading.Thread(target=send, daemon=True)
    th.start()
    return th

for k in (spin, spin_sync):
    a = np.zeros(64 * 64, np.int64)
    device.launch(k, a, np.int64(10), grid=64, block=64, backend="cpu")
    assert a.any()
    th = ctrl_c_after(0.5)
    t = time.monotonic()
    try:
        device.launch(k, a, np.int64(1 << 40), grid=64, block=64, backend="cpu")
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", round(time.monotonic() - t, 1), flush=True)
    except RuntimeError as e:
        print("RuntimeError", e, round(time.monotonic() - t, 1), flush=True)
    th.join()
    # The kernel still launches, and runs to its end.
    b = np.zeros(64 * 64, np.int64)
    device.launch(k, b, np.int64(10), grid=64, block=64, backend="cpu")
    c = np.zeros(64 * 64, np.int64)
    device.launch(k, c, np.int64(10), grid=64, block=64, backend="cpu")
    assert b.any() and (b == c).all()
print("done", flush=True)
"""


@pytest.mark.parametrize("mode", ["default", "handler"])
def test_ctrl_c_stops_a_long_cpu_launch(tmp_path, mode):
    """SIGINT from another thread of the process, sent while the main thread waits in a CPU
    launch of about 2^40 iterations per thread: the launch ends within seconds with Python's
    KeyboardInterrupt (or the user handler's exception), for a kernel with plain loops and
    for one whose threads meet at a barrier in every iteration; both kernels launch again
    and finish afterwards."""
    script = tmp_path / "spin_cpu.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ)
    p = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split("\n")
    want = "KeyboardInterrupt" if mode == "default" else "RuntimeError"
    stops = [line.split() for line in lines if line and line != "done"]
    assert len(stops) == 2, p.stdout
    for words in stops:
        assert words[0] == want, p.stdout
        # Prompt: the signal came after 0.5 s; the kernel would run for hours.
        assert float(words[-1]) < 30, p.stdout
    assert lines[-2] == "done", p.stdout
