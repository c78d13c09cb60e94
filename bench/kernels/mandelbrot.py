# mandelbrot: out[i, j] = number of iterations of z <- z^2 + c (z = 0, c = X0 + j*DX +
# (Y0 + i*DY)i) before |z|^2 > 4, at most MAXIT, in float32: FP32 throughput with
# divergence (neighbouring pixels stop after different counts).
# Benchmark: 4096 x 4096 over [-2, 0.5] x [-1.25, 1.25]; 2-D launch, block (32, 8),
# grid (w / 32, h / 8).
from cuda import device

MAXIT = 256
X0 = -2.0
Y0 = -1.25
DX = 2.5 / 4096
DY = 2.5 / 4096


@device.kernel
def mandelbrot(out):
    j, i = device.tid(2)
    if i < out.shape[0] and j < out.shape[1]:
        cx = X0 + float(j) * DX
        cy = Y0 + float(i) * DY
        x = 0.0
        y = 0.0
        it = 0
        while it < MAXIT:
            x2 = x * x
            y2 = y * y
            if x2 + y2 > 4.0:
                break
            y = 2.0 * x * y + cy
            x = x2 - y2 + cx
            it += 1
        out[i, j] = it
