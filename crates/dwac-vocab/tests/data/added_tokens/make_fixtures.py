"""Write the hand-made tokenizer.json fixtures of this folder and expected.json.

Run from anywhere: python3 make_fixtures.py  (needs only the standard library).
check.py then cross-checks everything against Hugging Face `tokenizers`.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
META = "\u2581"  # ▁


def bytes_to_unicode():
    """GPT-2's byte → character table (the byte-level alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = bytes_to_unicode()
U2B = {c: b for b, c in B2U.items()}


def added(id_, content, special, normalized=None):
    return {
        "id": id_,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": (not special) if normalized is None else normalized,
        "special": special,
    }


def bpe_model(vocab, merges, byte_fallback, unk_token=None):
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": unk_token,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": unk_token is not None,
        "byte_fallback": byte_fallback,
        "ignore_merges": False,
        "vocab": vocab,
        "merges": [list(m.split(" ")) for m in merges],
    }


def tokenizer_json(model, added_tokens, normalizer, pre_tokenizer, decoder):
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": decoder,
        "model": model,
    }


def vocab_from(tokens, merges):
    """Token list (id = position), then each merge result in merge order."""
    vocab = {}
    for t in tokens:
        assert t not in vocab, t
        vocab[t] = len(vocab)
    for m in merges:
        a, b = m.split(" ")
        assert a in vocab and b in vocab, m
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    return vocab


SP_NORMALIZER = {"type": "Replace", "pattern": {"String": " "}, "content": META}
SP_REPLACE_DECODER = {"type": "Replace", "pattern": {"String": META}, "content": " "}
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
DIGITS = [str(d) for d in range(10)]


# ---- expected bytes, by the rule "what the tokenizer's own decoder renders" ---------------------


def sp_bytes(token, byte_fallback):
    if byte_fallback and len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        return [int(token[3:5], 16)]
    return list(token.replace(META, " ").encode("utf-8"))


def bl_bytes(token):
    if all(c in U2B for c in token):
        return [U2B[c] for c in token]
    return list(token.encode("utf-8"))


def expected(tj, family):
    vocab = tj["model"]["vocab"]
    strings = {i: s for s, i in vocab.items()}
    specials = set()
    for a in tj["added_tokens"]:
        strings[a["id"]] = a["content"]
        if a["special"]:
            specials.add(a["id"])
    size = max(strings) + 1
    assert sorted(strings) == list(range(size)), "ids must be contiguous"
    byte_fallback = tj["model"]["byte_fallback"]
    out = []
    for i in range(size):
        s = strings[i]
        special = i in specials or (family == "sp" and s in ("<unk>", "<s>", "</s>"))
        if special:
            b = []
        elif family == "sp":
            b = sp_bytes(s, byte_fallback)
        else:
            b = bl_bytes(s)
        out.append({"id": i, "token": s, "bytes": b, "special": special})
    return out


# ---- 1. SentencePiece-style (Gemma-like) with metaspace runs as added tokens ---------------------


def sp_metaspace_runs():
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [META, META * 2, META * 4, "\n", "\n\n", "\t", "\t\t"]
    tokens += LETTERS + DIGITS + list(".,!?:;-'\"()")
    merges = [
        f"{META} {META}",
        f"{META * 2} {META * 2}",
        "\n \n",
        "\t \t",
        "h e",
        "l l",
        "he ll",
        "hell o",
        f"{META} w",
        "o r",
        f"{META}w or",
        f"{META}wor l",
        f"{META}worl d",
        f"{META} a",
        f"{META} b",
        "a b",
    ]
    vocab = vocab_from(tokens, merges)
    n = len(vocab)
    added_tokens = [
        added(0, "<unk>", True),
        added(1, "<s>", True),
        added(2, "</s>", True),
        added(vocab[META * 2], META * 2, False, normalized=False),
        added(vocab[META * 4], META * 4, False, normalized=False),
        added(n, META * 8, False, normalized=False),  # not in model.vocab: the last id
    ]
    decoder = {"type": "Sequence", "decoders": [SP_REPLACE_DECODER, {"type": "ByteFallback"}, {"type": "Fuse"}]}
    model = bpe_model(vocab, merges, byte_fallback=True, unk_token="<unk>")
    return tokenizer_json(model, added_tokens, SP_NORMALIZER, None, decoder), "sp"


# ---- 2. byte-level with whitespace-run added tokens ----------------------------------------------

BYTE_LEVEL_PRE = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
BYTE_LEVEL_DEC = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}


def bytelevel_ws_runs():
    tokens = [B2U[b] for b in range(256)]
    merges = [
        "Ġ Ġ",
        "ĠĠ ĠĠ",
        "Ċ Ċ",
        "ĉ ĉ",
        "h e",
        "l l",
        "he ll",
        "hell o",
        "Ġ w",
        "o r",
        "Ġw or",
        "Ġwor l",
        "Ġworl d",
        "Ġ b",
        "Ã ©",
    ]
    vocab = vocab_from(tokens, merges)
    n = len(vocab)
    added_tokens = [
        added(vocab["ĠĠ"], "ĠĠ", False, normalized=False),  # also in model.vocab
        added(n, "    ", False, normalized=False),  # raw spaces: not byte-level spelling
        added(n + 1, "\n\n", False, normalized=False),
        added(n + 2, "\t\t", False, normalized=False),
        added(n + 3, "<|endoftext|>", True),
    ]
    model = bpe_model(vocab, merges, byte_fallback=False)
    return tokenizer_json(model, added_tokens, None, BYTE_LEVEL_PRE, BYTE_LEVEL_DEC), "bl"


# ---- 3. added tokens in the middle of the id range -----------------------------------------------


def added_mid_range():
    alphabet = [B2U[b] for b in range(256)]
    # ids 0..4: "!" .. "%"; 5: "ĠĠĠ"; 6: "<tag>"; 7: "<|endoftext|>" (special); then the rest.
    tokens = alphabet[:5] + ["ĠĠĠ", "<tag>", "<|endoftext|>"] + alphabet[5:]
    merges = ["Ġ Ġ", "ĠĠ Ġ", "< t", "<t a", "<ta g", "<tag >", "h e", "l l", "he ll", "hell o"]
    vocab = vocab_from(tokens, merges)
    added_tokens = [
        added(5, "ĠĠĠ", False, normalized=False),
        added(6, "<tag>", False, normalized=True),
        added(7, "<|endoftext|>", True),
    ]
    model = bpe_model(vocab, merges, byte_fallback=False)
    return tokenizer_json(model, added_tokens, None, BYTE_LEVEL_PRE, BYTE_LEVEL_DEC), "bl"


# ---- 4. SentencePiece-style without byte fallback and without "{" --------------------------------


def no_brace():
    tokens = ["<unk>", "<s>", "</s>", META, "\n"] + LETTERS + DIGITS + list(".,!?:;-'\"()[]}")
    assert "{" not in tokens
    merges = [f"{META} {META}", "a b", "ab c"]
    vocab = vocab_from(tokens, merges)
    added_tokens = [added(0, "<unk>", True), added(1, "<s>", True), added(2, "</s>", True)]
    decoder = {"type": "Sequence", "decoders": [SP_REPLACE_DECODER, {"type": "Fuse"}]}
    model = bpe_model(vocab, merges, byte_fallback=False, unk_token="<unk>")
    return tokenizer_json(model, added_tokens, SP_NORMALIZER, None, decoder), "sp"


FIXTURES = {
    "sp_metaspace_runs.json": sp_metaspace_runs,
    "bytelevel_ws_runs.json": bytelevel_ws_runs,
    "added_mid_range.json": added_mid_range,
    "no_brace.json": no_brace,
}


def main():
    exp = {}
    for name, make in FIXTURES.items():
        tj, family = make()
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False, indent=2)
            f.write("\n")
        exp[name] = expected(tj, family)
    # One token per line, so diffs and reading stay easy.
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        f.write("{\n")
        for k, (name, toks) in enumerate(exp.items()):
            f.write(f"  {json.dumps(name)}: [\n")
            for j, t in enumerate(toks):
                comma = "," if j + 1 < len(toks) else ""
                f.write(f"    {json.dumps(t, ensure_ascii=False)}{comma}\n")
            f.write("  ]" + ("," if k + 1 < len(exp) else "") + "\n")
        f.write("}\n")
    for name, toks in exp.items():
        print(f"{name}: {len(toks)} ids")


if __name__ == "__main__":
    main()
