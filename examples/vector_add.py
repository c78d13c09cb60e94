from cuda import device


@device.kernel
def vector_add(a, b, c):
    i = device.tid(1)
    if i < len(c):
        c[i] = a[i] + b[i]
