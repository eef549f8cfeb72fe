#!/usr/bin/env bash
# The SGLang environment of `cargo dwac-bench servers` (target/peers/sglang-venv, or
# $DWAC_SGLANG_VENV): SGLang 0.5.23 at the grammar-backend level on CPU, as far as the package
# registry allows. SGLang's server needs its CUDA kernel package, which the registry does not
# carry; its grammar backends (`create_grammar_backend`, the registry, the mask calls) run on CPU.
#
# - torch, transformers, xgrammar and llguidance come from the xgrammar bench venv
#   (bench/peers/xgrammar/setup.sh, pinned there; about 5.6 GB), put on this venv's path by a
#   .pth file rather than installed a second time.
# - SGLang itself is installed without its dependencies (its pins name CUDA builds), then its
#   requirements that are not CUDA kernels, model zoos or the engines above, then the few modules
#   its import path needs beyond them (torchvision for the model configs, dill,
#   compressed-tensors), each without dependencies where a dependency would pull another torch.
# - dwac is installed from the workspace by the caller (`maturin develop`), which registers its
#   `sglang.srt.plugins` entry point.
#
# Idempotent: an environment whose sglang is the pinned one is left as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${DWAC_SGLANG_VENV:-$root/target/peers/sglang-venv}"
xvenv="${DWAC_XGRAMMAR_VENV:-$root/target/peers/xgrammar-venv}"
python="${PYTHON:-python3}"
want=0.5.23
bash "$root/bench/peers/xgrammar/setup.sh" >&2
if [ -x "$venv/bin/python" ] && [ "$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("sglang"))' 2>/dev/null || true)" = "$want" ]; then
    echo "sglang venv ready: $venv (sglang $want)"
    exit 0
fi
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
xsite="$("$xvenv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$xsite" >"$site/zz-xgrammar-venv.pth"
pip=("$venv/bin/python" -m pip install --quiet)
"${pip[@]}" --upgrade pip
"${pip[@]}" --no-deps "sglang==$want"
# SGLang's requirements less CUDA kernels, model zoos and the engines the xgrammar venv has.
"$venv/bin/python" - "$want" >"$venv/sglang-requirements.txt" <<'EOF'
import re, sys
from importlib.metadata import requires
skip = re.compile(r"^(torch|torchaudio|torchvision|torchcodec|flash|nvidia|cuda|sgl|sglang|flashinfer|tilelang|quack|"
                  r"humming|deepseek-recipe|kernels|xgrammar|transformers|llguidance|outlines|decord2|av|timm|"
                  r"torch_memory_saver|nvshmem|compressed-tensors|apache-tvm-ffi|tml-renderers|smg-grpc|datasets|"
                  r"modelscope|py-spy|numba|soundfile|tokenizers|mistral_common|openai-harmony|build|ninja|blobfile)\b",
                  re.I)
for r in requires("sglang") or []:
    if "extra ==" in r:
        continue
    r = r.split(";")[0].strip()
    if not skip.match(r):
        print(r)
EOF
"${pip[@]}" -r "$venv/sglang-requirements.txt"
"${pip[@]}" --no-deps "torchvision==0.29.2" "compressed-tensors" 
"${pip[@]}" dill pytest "maturin>=1.5,<2"
"$venv/bin/python" -c 'import sglang.srt.constrained.base_grammar_backend, sglang.srt.server_args; from importlib.metadata import version; print("sglang", version("sglang"))'
echo "sglang venv ready: $venv"
