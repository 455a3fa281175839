#!/usr/bin/env bash
# Puts build/python on the path of the python3 the build was made for (Debian's /usr/bin/python3
# unless configured otherwise), as `pip install -e` would: a clustersim.pth file in its site
# folder, the system one (/usr/local/lib/python3.X/dist-packages) as root, the user's otherwise.
# Without it: PYTHONPATH=build/python. Does nothing when the Python module was not built.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
if [ -z "$python" ] || ! compgen -G "$build/python/clustersim/_core*.so" >/dev/null; then
  echo "python-path.sh: no Python module in $build (needs pybind11-dev and python3-dev)" >&2
  exit 0
fi
"$python" - "$(cd "$build/python" && pwd)" <<'PY'
import os, site, sys
folder = site.getsitepackages()[0] if os.geteuid() == 0 else site.getusersitepackages()
os.makedirs(folder, exist_ok=True)
pth = os.path.join(folder, "clustersim.pth")
with open(pth, "w") as f:
    f.write(sys.argv[1] + "\n")
print(f"import clustersim ({sys.executable}): {pth} -> {sys.argv[1]}")
PY
