"""Fixtures the server backends' tests share (test_sglang.py, test_vllm.py)."""

import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
QWEN3 = ROOT.parent / "shared/data/tokenizers/qwen3"
QWEN3_LOGITS = 151936
QWEN3_EOS = 151645  # <|im_end|>


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    """A model folder SGLang's ServerArgs and vLLM's ModelConfig accept without weights: qwen3's
    tokenizer files and a small config of its architecture (the grammar paths read the
    tokenizer and the vocabulary size, never the weights)."""
    d = tmp_path_factory.mktemp("qwen3-model")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (d / f).write_bytes((QWEN3 / f).read_bytes())
    (d / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": QWEN3_LOGITS, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 32, "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 10000,
        "torch_dtype": "float32", "bos_token_id": 151643, "eos_token_id": QWEN3_EOS, "tie_word_embeddings": True,
    }))
    return d
