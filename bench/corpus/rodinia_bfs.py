# Port of Rodinia 3.1's bfs (breadth-first search): kernels Kernel and Kernel2.
# Origin: github.com/yuhc/gpu-rodinia (a mirror of Rodinia 3.1), cuda/bfs/kernel.cu, kernel2.cu and bfs.cu,
#   commit 9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4. Copyright (c) 2008-2011 University of
#   Virginia, BSD-style license (LICENSE in that repository). Ported to the cuda.device dialect
#   for pydevice's corpus.
# struct Node {int starting; int no_of_edges;} is a (no_of_nodes, 2) int32 array; bool
# arrays are NumPy bool. Launch as the original: block 512, grid ceil(no_of_nodes/512), the
# two kernels repeated until no node is updated. The graph: 2^20 nodes with 1 to 10 random
# edges each, like Rodinia's graph1MW_6 input.
#
# entry: Kernel
# sig: int32[:, ::1], int32[::1], bool[::1], bool[::1], bool[::1], int32[::1], int32
# entry: Kernel2
# sig: bool[::1], bool[::1], bool[::1], bool[::1], int32
import numpy as np

from cuda import device

NO_OF_NODES = 1 << 20
MAX_THREADS_PER_BLOCK = 512


@device.kernel
def Kernel(g_graph_nodes, g_graph_edges, g_graph_mask, g_updating_graph_mask, g_graph_visited, g_cost, no_of_nodes):
    tid = device.block_idx.x * MAX_THREADS_PER_BLOCK + device.thread_idx.x
    if tid < no_of_nodes and g_graph_mask[tid]:
        g_graph_mask[tid] = False
        for i in range(g_graph_nodes[tid, 0], g_graph_nodes[tid, 1] + g_graph_nodes[tid, 0]):
            id = g_graph_edges[i]
            if not g_graph_visited[id]:
                g_cost[id] = g_cost[tid] + 1
                g_updating_graph_mask[id] = True


@device.kernel
def Kernel2(g_graph_mask, g_updating_graph_mask, g_graph_visited, g_over, no_of_nodes):
    tid = device.block_idx.x * MAX_THREADS_PER_BLOCK + device.thread_idx.x
    if tid < no_of_nodes and g_updating_graph_mask[tid]:
        g_graph_mask[tid] = True
        g_graph_visited[tid] = True
        g_over[0] = True
        g_updating_graph_mask[tid] = False


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "rodinia_bfs.cu"
TOL = {"g_cost": (0, 0)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NO_OF_NODES": 700}


def setup(rng):
    n = NO_OF_NODES
    deg = rng.integers(1, 11, n).astype(np.int32)
    nodes = np.empty((n, 2), np.int32)
    nodes[:, 1] = deg
    nodes[:, 0] = np.concatenate(([0], np.cumsum(deg)[:-1]))
    edges = rng.integers(0, n, int(deg.sum())).astype(np.int32)
    mask = np.zeros(n, bool)
    visited = np.zeros(n, bool)
    cost = np.full(n, -1, np.int32)
    mask[0] = visited[0] = True  # the source is node 0
    cost[0] = 0
    return {"nodes": nodes, "edges": edges, "mask": mask, "updating": np.zeros(n, bool),
            "visited": visited, "g_cost": cost, "over": np.zeros(1, bool)}


def run(launch, d):
    n = NO_OF_NODES
    blocks = -(-n // MAX_THREADS_PER_BLOCK)
    threads = min(n, MAX_THREADS_PER_BLOCK)
    while True:
        d["over"][0] = False
        launch(Kernel, blocks, threads, d["nodes"], d["edges"], d["mask"], d["updating"], d["visited"], d["g_cost"], np.int32(n))
        launch(Kernel2, blocks, threads, d["mask"], d["updating"], d["visited"], d["over"], np.int32(n))
        if not bool(d["over"][0]):
            break


def reference(h):
    nodes, edges = h["nodes"], h["edges"]
    cost = np.full(len(nodes), -1, np.int64)
    cost[0] = 0
    frontier = np.array([0])
    level = 0
    while frontier.size:
        starts, degs = nodes[frontier, 0], nodes[frontier, 1]
        idx = np.repeat(starts, degs) + (np.arange(degs.sum()) - np.repeat(np.cumsum(degs) - degs, degs))
        nxt = np.unique(edges[idx])
        nxt = nxt[cost[nxt] < 0]
        level += 1
        cost[nxt] = level
        frontier = nxt
    return {"g_cost": cost}
