"""Data-parallel training with pydevice kernels (issue 36): examples/distributed/ddp_step.py
under torchrun with the NCCL backend on every GPU of the machine (at most 4), against the same
steps run shard by shard on one GPU. The parameters must be the same bits. Skips, saying why,
with fewer than two GPUs or without PyTorch's NCCL backend."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLE = os.path.join(ROOT, "examples", "distributed", "ddp_step.py")
SMALL = ["--steps", "5", "--warmup", "1", "--per-rank", "256", "--dim", "128", "--hidden", "320"]


def _result(out: str) -> dict:
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(lines) == 1, out
    return lines[0]


def test_ddp_step_is_bit_exact_against_one_gpu(torch, tmp_path):
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        pytest.skip("PyTorch has no NCCL backend here")
    world = min(torch.cuda.device_count(), 4)
    if world < 2:
        pytest.skip(f"needs two GPUs, this machine has {world}")
    env = dict(os.environ, PYDEVICE_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    ddp = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}",
         EXAMPLE, *SMALL], env=env, capture_output=True, text=True, timeout=600)
    assert ddp.returncode == 0, ddp.stdout + ddp.stderr
    ref = subprocess.run([sys.executable, EXAMPLE, "--reference", "--world", str(world), *SMALL],
                         env=env, capture_output=True, text=True, timeout=600)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    a, b = _result(ddp.stdout), _result(ref.stdout)
    assert (a["mode"], a["world"], b["mode"], b["world"]) == ("ddp", world, "reference", world)
    assert a["params_sha256"] == b["params_sha256"], (a, b)


def test_mpi_stencil_on_n_ranks_is_bit_exact_against_one_gpu(cupy):
    import shutil

    pytest.importorskip("mpi4py", reason="mpi4py is not installed")
    launcher = shutil.which("mpiexec") or shutil.which("mpirun")
    if launcher is None:
        pytest.skip("no mpiexec/mpirun on PATH")
    ranks = max(2, min(4, cupy.cuda.runtime.getDeviceCount()))
    args = [launcher, "-n", str(ranks)]
    version = subprocess.run([launcher, "--version"], capture_output=True, text=True).stdout
    if os.geteuid() == 0 and ("Open MPI" in version or "OpenRTE" in version or "PRRTE" in version):
        args.append("--allow-run-as-root")  # Open MPI refuses root without it
    r = subprocess.run(args + [sys.executable, os.path.join(ROOT, "examples", "distributed", "mpi_stencil.py"),
                               "--rows", "514", "--cols", "256", "--steps", "50"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bit-exact against one GPU: True" in r.stdout, r.stdout
