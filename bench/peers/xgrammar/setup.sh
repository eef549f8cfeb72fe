#!/usr/bin/env bash
# Creates the xgrammar bench venv (target/peers/xgrammar-venv, or $DWAC_XGRAMMAR_VENV) and
# installs the pinned requirements from PyPI. Idempotent: a venv whose xgrammar matches the pin
# is left as it is. Usage: bash bench/peers/xgrammar/setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${DWAC_XGRAMMAR_VENV:-$root/target/peers/xgrammar-venv}"
python="${PYTHON:-python3}"
want="$(grep -E '^xgrammar==' "$here/requirements.txt" | cut -d= -f3)"
if [ -x "$venv/bin/python" ] && [ "$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("xgrammar"))' 2>/dev/null || true)" = "$want" ]; then
    echo "xgrammar venv ready: $venv (xgrammar $want)"
    exit 0
fi
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
"$venv/bin/python" -c 'import xgrammar, tokenizers, numpy; from importlib.metadata import version; print("xgrammar", version("xgrammar"))'
echo "xgrammar venv ready: $venv"
