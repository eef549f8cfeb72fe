"""Cross-check the fixtures of this folder against Hugging Face `tokenizers` (Python).

    pip install tokenizers==0.22.2   # the version the Rust crate uses
    python3 check.py

1. Every fixture loads, and every added token gets its file id in `tokenizers` (which numbers added
   tokens that are not in model.vocab by position).
2. For every non-special id, `decode([id], skip_special_tokens=False)` as UTF-8 equals the bytes in
   expected.json, whenever that decode is valid text (no U+FFFD: a lone byte >= 0x80 decodes to
   U+FFFD). Every special id decodes to "" with skip_special_tokens=True.
3. An emulation of dwac's exact encoder (the edits of `build_encoder` in src/lib.rs: no
   post-processor, added tokens without lstrip/rstrip, special added tokens not matched, a literal
   `▁` spelled with byte-fallback tokens) spells the round-trip texts exactly with the bytes of
   expected.json, and "abc{" gives <unk> in no_brace.json.
"""

import json
import os

from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
META = "\u2581"
EXPECTED = json.load(open(os.path.join(HERE, "expected.json"), encoding="utf-8"))

# The texts of tests/added_tokens.rs (ROUND_TRIP_TEXTS), in the same order.
TEXTS = [
    " ", "  ", "   ", "    ", "     ", "      ", "       ", "        ", "         ",
    "a b", "a  b", "a   b", "a    b", "a     b", "a        b", "a         b",
    "\t", "\t\t", "\t\t\t", "\n", "\n\n", "\n\n\n",
    "\t \n", " \t\n \t\n", "\n \t \n\t\t  ", "mixed \t \n \t\t\n\n    end",
    " leading", "   leading three", "trailing ", "trailing    ", "  both  ",
    "hello world", "hello    world", "tab\tthen\t\tmore", "line\nbreak\n\n para",
    "café", "naïve résumé", "日本", "日本語  テキスト", "emoji 🦀 🎉", "👍🏽  two spaces", "\u00a0nbsp\u3000ideographic space",
]
# Literal spellings of whitespace runs (the token strings themselves) in the text.
LOOKALIKES = ["x\u2581\u2581y", "\u2581\u2581\u2581\u2581", "ĠĠ", "xĠĠĠy", "<tag>", "a<tag>b", "<0x0A>"]


def exact_encoder(path, exp):
    """dwac's edited copy of the tokenizer (src/lib.rs, build_encoder)."""
    tj = json.load(open(path, encoding="utf-8"))
    tj["truncation"] = tj["padding"] = tj["post_processor"] = None
    for t in tj["added_tokens"]:
        t["lstrip"] = t["rstrip"] = False
        t["special"] = exp[t["id"]]["special"]
    tok = Tokenizer.from_str(json.dumps(tj))
    tok.encode_special_tokens = True
    return tok, META if tj["normalizer"] is not None else None


def encode_exact(tok, meta, text):
    if meta is None:
        return tok.encode(text, add_special_tokens=False).ids
    ids = []
    pieces = text.split(meta)
    for k, piece in enumerate(pieces):
        if piece:
            ids += tok.encode(piece, add_special_tokens=False).ids
        if k + 1 < len(pieces):
            ids += [tok.token_to_id(f"<0x{b:02X}>") for b in meta.encode()]
    return ids


def spell(exp, ids):
    out = b""
    for i in ids:
        assert not exp[i]["special"], f"special id {i} in an encoding"
        out += bytes(exp[i]["bytes"])
    return out


def main():
    for name, exp in EXPECTED.items():
        path = os.path.join(HERE, name)
        tok = Tokenizer.from_file(path)
        tj = json.load(open(path, encoding="utf-8"))
        for a in tj["added_tokens"]:
            assert tok.token_to_id(a["content"]) == a["id"], (name, a)
        assert tok.get_vocab_size(with_added_tokens=True) == len(exp), name
        compared = skipped = 0
        for t in exp:
            i = t["id"]
            if t["special"]:
                assert tok.decode([i], skip_special_tokens=True) == "", (name, i)
                continue
            d = tok.decode([i], skip_special_tokens=False)
            if "\ufffd" in d:
                skipped += 1
                continue
            assert d.encode("utf-8") == bytes(t["bytes"]), (name, i, t["token"], d, t["bytes"])
            compared += 1
        print(f"{name}: {len(exp)} ids; {compared} non-special decodes equal expected.json, {skipped} not valid UTF-8")
        for a in tj["added_tokens"]:
            if not a["special"]:
                print(f"  added {a['id']:>3} {a['content']!r:>14}: decode -> {tok.decode([a['id']])!r}")

        enc, meta = exact_encoder(path, exp)
        if name == "no_brace.json":
            ids = encode_exact(enc, meta, "abc{")
            print(f"  'abc{{' -> {ids} {[exp[i]['token'] for i in ids]}")
            assert exp[ids[-1]]["token"] == "<unk>"
            continue
        for text in TEXTS:
            ids = encode_exact(enc, meta, text)
            assert spell(exp, ids) == text.encode(), (name, text, ids)
        print(f"  {len(TEXTS)} round-trip texts spelled exactly")
        for text in ["a    b", "a        b", "x\n\n\ny", "a  \t\tb"]:
            ids = encode_exact(enc, meta, text)
            print(f"  {text!r} -> {ids} {[exp[i]['token'] for i in ids]}")
        for text in LOOKALIKES:
            ids = encode_exact(enc, meta, text)
            got = spell(exp, ids)
            verdict = "exact" if got == text.encode() else f"NOT EXACT: spells {got.decode(errors='replace')!r}"
            print(f"  lookalike {text!r} -> {[exp[i]['token'] for i in ids]}: {verdict}")


if __name__ == "__main__":
    main()
