# GradBench's gmm input for d = 10, K = 25, n = 1000 (its eval's `generate`, seed 31337), as
# little-endian Float64: x (n·d, row by row), alpha (K), mu (K·d), q (K·d), l (K·d(d−1)/2).
# bench/workloads.ts reads it, so the bench's gmm runs on GradBench's own data:
#   python3 scripts/gmm-input.py bench/data/gmm-d10-k25-n1000.f64
import sys

import numpy as np

d, k, n, seed = 10, 25, 1000, 31337
rng = np.random.default_rng(seed=seed)
# Draw by draw as GradBench's generate does (one call per row: the same stream either way).
x = [rng.normal(size=d) for _ in range(n)]
alpha = rng.normal(size=k)
mu = [rng.uniform(size=d) for _ in range(k)]
q = [rng.normal(size=d) for _ in range(k)]
l = [rng.normal(size=d * (d - 1) // 2) for _ in range(k)]
data = np.concatenate([np.concatenate(x), alpha, np.concatenate(mu), np.concatenate(q), np.concatenate(l)])
data.astype('<f8').tofile(sys.argv[1])
