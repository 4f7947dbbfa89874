# The polynomial of the core's tanh below |tanh| = 1/2 (tanhOf in assembly/ops.ts): the degree-10
# Chebyshev fit of (tanh x - x)/x³ in u = x² on [0, 0.302], and the error of tanh evaluated as the
# core does (Horner in u, then x + x·u·p, in doubles: Python floats are IEEE doubles, so these
# are the core's bits) against mpmath's tanh, in ulps, at 25,000 points of [0, 0.5493].
#   python3 scripts/tanh-fit.py      (needs mpmath)
import random
import struct
import mpmath as mp

mp.mp.dps = 60
EDGE = 0.5493061443340549  # TANH_EXP_FROM: log(3)/2, where |tanh| = 1/2


def g(u):
    if u == 0:
        return mp.mpf(-1) / 3
    x = mp.sqrt(u)
    return (mp.tanh(x) - x) / x**3


coefficients = [float(c) for c in mp.chebyfit(g, [0, mp.mpf(EDGE) ** 2 * 1.0001], 11)]
print('coefficients, highest degree first:')
for c in coefficients:
    print(f'  {c!r}')


def tanh_core(x):
    if abs(x) < 1.4901161193847656e-8:
        return x
    u = x * x
    p = coefficients[0]
    for c in coefficients[1:]:
        p = p * u + c
    return x + x * u * p


def ulp(y):
    bits = struct.unpack('<q', struct.pack('<d', y))[0]
    return struct.unpack('<d', struct.pack('<q', bits + 1))[0] - y


random.seed(1)
points = [EDGE * random.random() for _ in range(20000)] + [0.55 * mp.exp(-40 * random.random()) for _ in range(5000)]
worst = max((abs(mp.mpf(tanh_core(float(x))) - mp.tanh(mp.mpf(float(x)))) / ulp(float(mp.tanh(mp.mpf(float(x))))), float(x)) for x in points)
print(f'largest error: {mp.nstr(worst[0], 3)} ulp at x = {worst[1]!r}')
