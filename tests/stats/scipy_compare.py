"""ki's Mann-Whitney U test against SciPy's, on the pairs utest_pairs prints.

Usage: scipy_compare.py UTEST_PAIRS_BINARY
Every p-value must equal scipy.stats.mannwhitneyu(x, y, method="auto") to
1e-9, the U statistic exactly, and the method (exact or asymptotic) must be
the one SciPy's "auto" picks. Exit 77 (skipped) when SciPy is not installed.
"""
import json
import subprocess
import sys

try:
    import numpy as np
    from scipy import stats
    from scipy.stats import _mannwhitneyu
except ImportError:
    print("scipy comparison skipped: python3-scipy is not installed (scripts/install-deps.sh)")
    sys.exit(77)

out = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout
pairs = [json.loads(line) for line in out.splitlines()]
assert len(pairs) == 1000, len(pairs)
worst = 0.0
methods = {"exact": 0, "asymptotic": 0}
tied = 0
failures = []
for i, p in enumerate(pairs):
    x, y = np.array(p["x"]), np.array(p["y"])
    res = stats.mannwhitneyu(x, y, alternative="two-sided", method="auto")
    method = _mannwhitneyu._mwu_choose_method(len(x), len(y), np.concatenate([x, y]), "auto")
    methods[p["method"]] += 1
    tied += len(np.unique(np.concatenate([x, y]))) < len(x) + len(y)
    err = abs(res.pvalue - p["p"])
    worst = max(worst, err)
    if err > 1e-9 or res.statistic != p["u1"] or method != p["method"]:
        failures.append((i, len(x), len(y), p["method"], method, p["u1"], res.statistic, p["p"], res.pvalue))
print(f"{len(pairs)} pairs ({methods['exact']} exact, {methods['asymptotic']} asymptotic, {tied} with ties); "
      f"largest |p_ki - p_scipy| = {worst:.3g}")
for f in failures[:20]:
    print("MISMATCH pair %d (n1 %d, n2 %d): method ki %s scipy %s, U1 ki %r scipy %r, p ki %r scipy %r" % f)
sys.exit(1 if failures else 0)
