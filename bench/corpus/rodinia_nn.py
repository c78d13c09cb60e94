# Port of Rodinia 3.1's nn (nearest neighbour): kernel euclid.
# Origin: github.com/yuhc/gpu-rodinia (a mirror of Rodinia 3.1), cuda/nn/nn_cuda.cu,
#   commit 9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4. Copyright (c) 2008-2011 University of
#   Virginia, BSD-style license (LICENSE in that repository). Ported to the cuda.device dialect
#   for pydevice's corpus.
# LatLong records (two floats) are a (numRecords, 2) float32 array. Launch as the original:
# block 256, grid (gridX, gridY) from ceilDiv(numRecords, 256) and the maximum grid x size.
# numRecords = 2^24 (the original reads its records from files).
#
# entry: euclid
# sig: float32[:, ::1], float32[::1], int32, float32, float32
import math

import numpy as np

from cuda import device

NUM_RECORDS = 1 << 24
DEFAULT_THREADS_PER_BLOCK = 256
MAX_GRID_X = 2147483647


@device.kernel
def euclid(d_locations, d_distances, numRecords, lat, lng):
    globalId = device.block_dim.x * (device.grid_dim.x * device.block_idx.y + device.block_idx.x) + device.thread_idx.x  # more efficient
    if globalId < numRecords:
        d_distances[globalId] = math.sqrt((lat - d_locations[globalId, 0]) * (lat - d_locations[globalId, 0])
                                          + (lng - d_locations[globalId, 1]) * (lng - d_locations[globalId, 1]))


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "rodinia_nn.cu"
TOL = {"d_distances": (1e-5, 1e-4)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NUM_RECORDS": 1000}


def setup(rng):
    loc = np.empty((NUM_RECORDS, 2), np.float32)
    loc[:, 0] = rng.uniform(-90, 90, NUM_RECORDS)
    loc[:, 1] = rng.uniform(-180, 180, NUM_RECORDS)
    return {"d_locations": loc, "d_distances": np.zeros(NUM_RECORDS, np.float32),
            "lat": np.float32(30.0), "lng": np.float32(90.0)}


def run(launch, d):
    threads = DEFAULT_THREADS_PER_BLOCK
    blocks = -(-NUM_RECORDS // threads)
    grid_y = -(-blocks // MAX_GRID_X)
    grid_x = -(-blocks // grid_y)
    launch(euclid, (grid_x, grid_y), threads, d["d_locations"], d["d_distances"], np.int32(NUM_RECORDS), d["lat"], d["lng"])


def reference(h):
    loc = h["d_locations"].astype(np.float64)
    return {"d_distances": np.hypot(float(h["lat"]) - loc[:, 0], float(h["lng"]) - loc[:, 1])}
