# stencil5: one Jacobi-style step of a 5-point stencil on a 2-D float32 grid:
#   out[i, j] = 0.5 * u[i, j] + 0.125 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1])
# at interior points; boundary points are copied. One element a thread.
# Benchmark: 8192 x 8192; 2-D launch, block (32, 8), grid (cols / 32, rows / 8).
from cuda import device


@device.kernel
def stencil5(u, out):
    j, i = device.tid(2)
    rows = u.shape[0]
    cols = u.shape[1]
    if i < rows and j < cols:
        if i > 0 and i < rows - 1 and j > 0 and j < cols - 1:
            out[i, j] = 0.5 * u[i, j] + 0.125 * (
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
            )
        else:
            out[i, j] = u[i, j]
