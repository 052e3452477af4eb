#!/usr/bin/env bash
# Runs scipy_compare.py under a Python that has SciPy: Debian's python3-scipy
# lives in the system interpreter, which a python3 earlier on PATH (a
# virtualenv, pyenv) may not see. Exit 77 (skipped) when none has it.
set -u
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import scipy' 2>/dev/null; then
    exec "$py" "$(dirname "$0")/scipy_compare.py" "$@"
  fi
done
echo "scipy comparison skipped: no python3 with scipy (scripts/install-deps.sh installs python3-scipy)"
exit 77
