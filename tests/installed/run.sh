#!/usr/bin/env bash
# Every template, executed as a reader outside the repository would run it: a fresh virtualenv at the
# oldest supported transformers (requirements-floor.txt), the library installed the way the Colab
# install cell does it (`pip install "sinkframes @ git+<url>@<commit>"`, here with a file:// URL to
# this checkout's HEAD, so only committed files count), and the smoke profile, in a scratch folder.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/sinkframes-installed.XXXXXX")"
trap 'rm -rf "$work"' EXIT
commit="$(git -C "$repo" rev-parse HEAD)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "[installed] note: uncommitted changes are not part of this run (it installs $commit)" >&2
fi
"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install --quiet --upgrade pip
"$py" -m pip install --quiet torch==2.13.0
"$py" -m pip install --quiet -r "$repo/requirements-floor.txt"
"$py" -m pip install --quiet "sinkframes @ git+file://$repo@$commit" "papermill>=2.5" "ipykernel>=6"
# the kernel is this virtualenv's python, whatever kernels the user has elsewhere
export JUPYTER_DATA_DIR="$work/jupyter" JUPYTER_PATH="$work/venv/share/jupyter"
"$py" -m ipykernel install --sys-prefix --name python3 >/dev/null
cd "$work"
HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false \
  SINKFRAMES_CACHE="$work/cache" "$py" "$repo/tests/installed/run_templates.py" \
  --templates "$repo/notebooks" --work "$work" --floor "$repo/requirements-floor.txt"
