#!/usr/bin/python3
"""Reference values for the special-function ops, computed with mpmath at 60 significant digits
and rounded once to the nearest double: value, first and second derivative per point.

    /usr/bin/python3 scripts/special-references.py   # writes test/fixtures/special-references.json

(mpmath from the Debian package python3-mpmath; test/special-accuracy.test.ts reads the file.)
Numbers are written as strings ("Infinity", "-0", "NaN" included) so JSON keeps every one.
The grids are fixed (no randomness): dense where each function varies, out into its tails, and
through the thresholds where the implementations switch approximation.
"""
import json
import math
import os
import statistics

import mpmath
from mpmath import mp, mpf

mp.dps = 60


def text(v):
    """Nearest double of an mpmath value (or a float), as a string JS Number() reads back."""
    if isinstance(v, mpmath.mpc):
        v = v.real
    f = float(v)  # mpf -> float rounds to nearest
    if math.isnan(f):
        return 'NaN'
    if math.isinf(f):
        return 'Infinity' if f > 0 else '-Infinity'
    if f == 0 and math.copysign(1, f) < 0:
        return '-0'
    return repr(f)


def spread(lo, hi, n):
    """n doubles spread over [lo, hi] without landing on a regular lattice (golden-ratio steps)."""
    g = (math.sqrt(5) - 1) / 2
    return [lo + (hi - lo) * ((k * g) % 1.0) for k in range(n)]


def logspread(lo, hi, n):
    return [math.exp(x) for x in spread(math.log(lo), math.log(hi), n)]


SPECIAL = [0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 2.2e-308, -2.2e-308, 1e-10, -1e-10, 1.0, -1.0,
           1e308, -1e308, math.inf, -math.inf, math.nan]
# Where erf/erfc switch approximation (|x| = 0.84375, 1.25, 1/0.35, 6, 28), also seen through x/√2.
ERF_EDGES = [s * e * k for e in [0.84375, 1.25, 2.857142857142857, 6.0, 28.0] for s in [1, -1] for k in [1, 1 + 2 ** -52, 1 - 2 ** -53]]
PHI_EDGES = ERF_EDGES + [e * math.sqrt(2) for e in ERF_EDGES] + [-38.4, -38.5, -37.5, -40.0]


def grid(*parts):
    out = []
    seen = set()
    for part in parts:
        for x in part:
            key = (x, math.copysign(1, x)) if x == x else 'nan'
            if key not in seen:
                seen.add(key)
                out.append(float(x))
    return out


def ncdf(x):
    return mp.erfc(-x / mp.sqrt(2)) / 2


def npdf(x):
    return mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)


def erf_rows(x):
    if math.isnan(x):
        return [x, math.nan, math.nan, math.nan]
    if math.isinf(x) or abs(x) > 1e4:
        return [x, math.copysign(1, x), 0.0, 0.0]
    X = mpf(x)
    d = 2 / mp.sqrt(mp.pi) * mp.exp(-X * X)
    return [x, mp.erf(X), d, -2 * X * d]


def erfc_rows(x):
    if math.isnan(x):
        return [x, math.nan, math.nan, math.nan]
    if math.isinf(x) or abs(x) > 1e4:
        return [x, 0.0 if x > 0 else 2.0, -0.0, 0.0]
    X = mpf(x)
    d = 2 / mp.sqrt(mp.pi) * mp.exp(-X * X)
    return [x, mp.erfc(X), -d, 2 * X * d]


def ncdf_rows(x):
    if math.isnan(x):
        return [x, math.nan, math.nan, math.nan]
    if math.isinf(x) or abs(x) > 1e4:
        return [x, 1.0 if x > 0 else 0.0, 0.0, 0.0]
    X = mpf(x)
    return [x, ncdf(X), npdf(X), -X * npdf(X)]


def nlcdf_rows(x):
    if math.isnan(x):
        return [x, math.nan, math.nan, math.nan]
    if x == math.inf:
        return [x, 0.0, 0.0, 0.0]
    if x == -math.inf:
        return [x, -math.inf, math.inf, math.nan]
    X = mpf(x)
    if x > 1e4:
        return [x, 0.0, 0.0, 0.0]
    if x < -1e4:
        # log Φ(x) = -x²/2 - log(-x√(2π)) + log(1 - 1/x² + 3/x⁴ - 15/x⁶ + 105/x⁸ - 945/x¹⁰ ...)
        z = 1 / (X * X)
        series = 1 - z + 3 * z ** 2 - 15 * z ** 3 + 105 * z ** 4 - 945 * z ** 5
        dseries = (-1 + 6 * z - 45 * z ** 2 + 420 * z ** 3 - 4725 * z ** 4) * (-2 / X ** 3)
        value = -X * X / 2 - mp.log(-X * mp.sqrt(2 * mp.pi)) + mp.log(series)
        gap = 1 / X - dseries / series  # -x - m, kept apart: m itself is -x to 60 digits
        m = -X - gap  # d/dx of the line above
        return [x, value, m, m * gap]
    P = ncdf(X)
    m = npdf(X) / P
    # Above 0, 1 - Φ(x) = Φ(-x) keeps its digits where Φ(x) rounds to 1.
    return [x, mp.log1p(-ncdf(-X)) if x > 0 else mp.log(P), m, m * (-X - m)]


def ndtri_of(p):
    """Φ⁻¹(p) by Newton's method on log Φ (or log Φ(-y) above 1/2) from a double start."""
    P = mpf(p)
    upper = P > mpf(1) / 2
    target = mp.log(1 - P) if upper else mp.log(P)
    y = mpf(statistics.NormalDist().inv_cdf(min(max(p, 1e-300), 1 - 1e-16)))
    if upper:
        y = -y
    for _ in range(200):
        Phi = ncdf(y)
        step = (mp.log(Phi) - target) * Phi / npdf(y)
        y -= step
        if abs(step) < mpf(10) ** (-55) * (1 + abs(y)):
            break
    return -y if upper else y


def ndtri_rows(p):
    if math.isnan(p) or p < 0 or p > 1:
        return [p, math.nan, math.nan, math.nan]
    if p == 0:
        return [p, -math.inf, math.inf, -math.inf]
    if p == 1:
        return [p, math.inf, math.inf, math.inf]
    y = ndtri_of(p)
    d = mp.sqrt(2 * mp.pi) * mp.exp(y * y / 2)
    return [p, y, d, y * d * d]


def is_pole(x):
    return x <= 0 and math.floor(x) == x


def lgamma_rows(x):
    if math.isnan(x) or x == -math.inf:
        return [x, math.inf if x == -math.inf else math.nan, math.nan, math.nan]
    if x == math.inf:
        return [x, math.inf, math.inf, 0.0]
    if x == 0:
        return [x, math.inf, -math.inf if math.copysign(1, x) > 0 else math.inf, math.inf]
    if is_pole(x):
        return [x, math.inf, math.nan, math.inf]
    X = mpf(x)
    return [x, mp.log(abs(mp.gamma(X))) if abs(x) < 1e5 else mp.loggamma(X).real, mp.psi(0, X), mp.psi(1, X)]


def digamma_rows(x):
    if math.isnan(x) or x == -math.inf:
        return [x, math.nan, math.nan, math.nan]
    if x == math.inf:
        return [x, math.inf, 0.0, -0.0]
    if x == 0:
        s = math.copysign(1, x)
        return [x, -s * math.inf, math.inf, -s * math.inf]
    if is_pole(x):  # no value, so no derivative (although ψ' tends to +Inf from both sides)
        return [x, math.nan, math.nan, math.nan]
    X = mpf(x)
    return [x, mp.psi(0, X), mp.psi(1, X), mp.psi(2, X)]


# The worst points probes found on denser grids against mpmath (2026-12-05, two of them; 2026-12-06,
# one more: normLogCdf's value on wasm, f' and f'', ndtri's f' and f'', digamma far out on the
# negative axis; 2026-12-07, normLogCdf's f'' at -29.58 and -28.68), and the ranges where Φ and log Φ take a rounded −x/√2 (erf's branches for
# |x|/√2 < 1.25).
PROBE = {
    'erfc': [2.204051066218596],
    'normCdf': [-1.5559251769289055, -1.1714108990716936] + spread(-1.77, -1.2, 120) + spread(-1.2, -0.8, 80),
    'normLogCdf': [1.5637108342209782, 1.189112914686203, 2.8876795113086704, 3.5272059691996747, 6.676327798569247,
                   -25.65717379276081, -29.55824311622233, 32.83742737739661,
                   -29.583533921733178, -28.676953224441863] + spread(1.2, 1.77, 120) + spread(0.8, 1.2, 80),
    'ndtri': [6.457387579353667e-195, 4.716879057422048e-297, 1.4837026395737582e-144, 1.09478704191235e-309],
    'lgamma': [10.632431268692017],
    'digamma': [0.9459389569798057, -9037.900477789626],
}

# Points near the poles and the zeros of lgamma and digamma on the negative axis.
NEG = [-k + f for k in range(1, 12) for f in [0.5, 0.1, 0.9, 0.01, 0.99, 1e-6, 1 - 1e-6]]

OPS = {
    'erf': (erf_rows, grid(SPECIAL, ERF_EDGES, spread(-7, 7, 700), logspread(1e-12, 1, 100), [-x for x in logspread(1e-12, 1, 100)], [30.0, -30.0])),
    'erfc': (erfc_rows, grid(SPECIAL, ERF_EDGES, spread(-7, 27.5, 700), logspread(1e-12, 1, 100), [27.2, 27.3, 30.0, -30.0], PROBE['erfc'])),
    'normCdf': (ncdf_rows, grid(SPECIAL, PHI_EDGES, spread(-38.4, 9, 700), [-x for x in logspread(1e-12, 1, 100)], [40.0, -45.0], PROBE['normCdf'])),
    # spread(-100, -30, 140): where the second derivative's direct form cancels before its
    # asymptotic series takes over at -30 (the grid had few points there and missed 1.8e-12).
    'normLogCdf': (nlcdf_rows, grid(SPECIAL, PHI_EDGES, spread(-40, 10, 700), spread(-100, -30, 140), [-30.0, -30.000000000000004, -29.999999999999996],
                                    [-x for x in logspread(40, 1e150, 200)], [-1e154, -1.8e154], [38.0, 39.0, 100.0], PROBE['normLogCdf'])),
    'ndtri': (ndtri_rows, grid([0.0, 1.0, -0.0, 5e-324, -5e-324, 1e-300, 2.2e-308, -2.2e-308, -1.0, 1e308, -1e308, 0.5, 0.075, 0.925, 1 - 2 ** -53, 2 ** -53, -0.5, 1.5, math.nan, math.inf, -math.inf],
                               spread(0, 1, 500), logspread(1e-300, 0.5, 400), [1 - p for p in logspread(1e-16, 0.5, 200)], PROBE['ndtri'])),
    'lgamma': (lgamma_rows, grid(SPECIAL, [2.0, 3.0, 0.5, 1.5, 1.4616321449683622, 0.9, 0.7315998077392578, 0.23163998126983643, 1.7316312789916992, 1.2316322326660156, 8.0, 2.0 ** 58, 2.0 ** 52, -2.0 ** 52, -3.0, -2.5],
                                 spread(0, 30, 600), logspread(30, 1e300, 200), logspread(1e-30, 1, 100), spread(-30, 0, 300), NEG, PROBE['lgamma'])),
    'digamma': (digamma_rows, grid(SPECIAL, [2.0, 3.0, 0.5, 1.5, 1.4616321449683622, 10.0, 9.999999999999998, -3.0, -2.5],
                                   spread(0, 30, 600), logspread(30, 1e300, 200), logspread(1e-30, 1, 100), spread(-30, 0, 300), NEG, PROBE['digamma'])),
}


def main():
    out = {}
    for name, (rows, points) in OPS.items():
        out[name] = [[text(v) for v in rows(x)] for x in points]
    path = os.path.join(os.path.dirname(__file__), '..', 'test', 'fixtures', 'special-references.json')
    with open(path, 'w') as f:
        f.write('{\n')
        f.write(',\n'.join(f'  "{name}": [\n' + ',\n'.join('    ' + json.dumps(r) for r in rows) + '\n  ]' for name, rows in out.items()))
        f.write('\n}\n')
    print(path, {name: len(rows) for name, rows in out.items()})


if __name__ == '__main__':
    main()
