#!/usr/bin/env python3
"""SGLang's grammar path, dwac next to its built-in xgrammar and llguidance backends, in one
process, on CPU: every backend created by SGLang's own ``create_grammar_backend`` (dwac through
its registry), the same requests, the same token traces.

Usage: python bench/python/sglang_bench.py --model-dir DIR [--schemas 40] [--batches 1,64,256,1024]
           [--steps 20] [--out sglang.json]

- Batch step: ``fill_vocab_mask_batched`` (what SGLang's ``SamplingBatchInfo`` calls once per
  decoding step for the whole batch) at each batch size, ms per step; rows cycle over requests
  mixing MaskBench schemas (the first ``--schemas`` of Glaiveai2K and of Github_easy with a
  valid instance every engine compiles and accepts), a llama.cpp GBNF grammar and a tool-calling
  structural tag; between steps every row accepts its next trace token (untimed).
- Time to first mask: dispatch (compile) + a fresh copy + its first fill, ms per request; for
  dwac also from a precompiled artifact directory (``DWAC_CACHE_DIR`` holding every request's
  artifact under its key: the hit is an mmap) and with a cache miss.
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
MASKBENCH = ROOT.parent / "shared/data/jsonschemabench/maskbench/data"
GBNF = ROOT.parent / "shared/data/grammars/llama.cpp"
VOCAB = 151936


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def summary(xs):
    return {k: round(pct(xs, p), 3) for k, p in [("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)]}


def ordered(schema, value):
    """`value` with object keys in the schema's `properties` order (then the others), as dwac
    compiles objects (definition order); other engines accept any order."""
    if isinstance(value, dict) and isinstance(schema, dict):
        props = schema.get("properties") or {}
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: ordered(props.get(k, {}), value[k]) for k in keys}
    if isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        return [ordered(schema["items"], v) for v in value]
    return value


def requests(n):
    """(kind, key_string, text) per request."""
    out = []
    for split in ("Glaiveai2K", "Github_easy"):
        for f in sorted(MASKBENCH.glob(f"{split}---*.json"))[:n]:
            d = json.loads(f.read_text())
            docs = [t["data"] for t in d["tests"] if t.get("valid")]
            if docs:
                out.append(("json", json.dumps(d["schema"]), json.dumps(ordered(d["schema"], docs[0]))))
    out.append(("ebnf", (GBNF / "arithmetic.gbnf").read_text(), "(1+2)*3"))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    # The older {structures, triggers} form with a text trigger: the one form every backend of
    # both servers takes (their llguidance backends refuse the {"format"} form, and do not match
    # a trigger that is a special token, as qwen3's <tool_call> is).
    tag = {"structures": [{"begin": "<function=get_weather>", "schema": schema, "end": "</function>"}], "triggers": ["<function="]}
    out.append(("structural_tag", json.dumps(tag), 'Sure.<function=get_weather>{"city": "Oslo"}</function>'))
    return out


def backends(model_dir, names):
    from sglang.srt import runtime_context as rc
    from sglang.srt.constrained.base_grammar_backend import create_grammar_backend
    from sglang.srt.server_args import ServerArgs
    from transformers import AutoTokenizer

    import dwac.integrations.sglang as dsgl

    dsgl.register()
    tok = AutoTokenizer.from_pretrained(model_dir)
    out = {}
    for name in names:
        sa = ServerArgs(model_path=model_dir, device="cpu", grammar_backend=name)
        rc.publish(sa, role="scheduler")
        out[name] = create_grammar_backend(sa, tok, VOCAB, {tok.eos_token_id})
    return tok, out


def compile_one(b, key):
    v, hit = b.get_cached_or_future_value(key, False)
    g = v if hit else v.result()
    return g


def first_masks(b, kept):
    """Time to first mask per request, ms: dispatch (a compile or a cache hit), a fresh copy, its
    first fill; after a warm-up request served (the backend's first compile and fill), as in a
    server that has served one."""
    w = compile_one(b, ("regex", "warm-up")).copy()
    w.fill_vocab_mask(w.allocate_vocab_mask(VOCAB, 1, "cpu"), 0)
    xs = []
    for kind, key, _ in kept:
        t = time.perf_counter()
        g = compile_one(b, (kind, key)).copy()
        m = g.allocate_vocab_mask(VOCAB, 1, "cpu")
        g.fill_vocab_mask(m, 0)
        xs.append((time.perf_counter() - t) * 1e3)
    return xs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--schemas", type=int, default=40)
    ap.add_argument("--batches", default="1,64,256,1024")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--backends", default="dwac,xgrammar,llguidance")
    ap.add_argument("--out")
    args = ap.parse_args()
    names = [n for n in args.backends.split(",") if n]
    from sglang.srt.constrained.base_grammar_backend import GrammarRow, InvalidGrammarObject

    tok, bs = backends(args.model_dir, names)
    reqs = requests(args.schemas)
    # Requests every backend compiles and whose trace every backend accepts to the end.
    kept, compiled = [], {n: [] for n in names}
    for kind, key, text in reqs:
        ids = tok.encode(text, add_special_tokens=False)
        gs = {}
        for n in names:
            g = compile_one(bs[n], (kind, key))
            if isinstance(g, InvalidGrammarObject) or g is None:
                break
            try:
                c = g.copy()
                for t in ids:
                    c.accept_token(t)
            except Exception:
                break
            gs[n] = g
        if len(gs) == len(names):
            kept.append((kind, key, ids))
            for n in names:
                compiled[n].append(gs[n])
    from importlib.metadata import version

    report = {"sglang": version("sglang"), "requests": len(kept), "of": len(reqs), "kinds": sorted({k for k, _, _ in kept}), "batch": {}, "ttfm_ms": {}}
    print(f"{len(kept)} of {len(reqs)} requests kept", file=sys.stderr)
    for B in [int(x) for x in args.batches.split(",")]:
        row = {}
        for n in names:
            rows = [(compiled[n][i % len(kept)].copy(), kept[i % len(kept)][2]) for i in range(B)]
            mask = rows[0][0].allocate_vocab_mask(VOCAB, B, "cpu")
            cls = type(rows[0][0])
            times = []
            for step in range(args.steps + 1):
                entries = [GrammarRow(i, g) for i, (g, ids) in enumerate(rows) if step < len(ids) and not g.is_terminated()]
                if not entries:
                    break
                t = time.perf_counter()
                cls.fill_vocab_mask_batched(entries, mask)
                dt = (time.perf_counter() - t) * 1e3
                if step > 0:  # (the first step warms up the backend's threads)
                    times.append(dt)
                for i, g in entries:
                    g.accept_token(rows[i][1][step])
            row[n] = {"ms_per_step": summary(times), "steps": len(times)}
        report["batch"][f"B={B}"] = row
        print(f"B={B}: " + ", ".join(f"{n} {row[n]['ms_per_step']['p50']} ms" for n in names), file=sys.stderr)
    # Time to first mask, every kept request, backends fresh (no memory cache).
    fresh = backends(args.model_dir, names)[1]
    for n in names:
        report["ttfm_ms"][n] = summary(first_masks(fresh[n], kept))
    if "dwac" in names:
        with tempfile.TemporaryDirectory() as d:
            os.environ["DWAC_CACHE_DIR"] = d
            warm = backends(args.model_dir, ["dwac"])[1]["dwac"]
            for kind, key, _ in kept:  # (precompile: every artifact written under its key)
                compile_one(warm, (kind, key))
            hit = backends(args.model_dir, ["dwac"])[1]["dwac"]
            report["ttfm_ms"]["dwac (artifact directory hit)"] = summary(first_masks(hit, kept))
            report["disk_hits"] = hit.compiler.cache_info()["disk_hits"]
            del os.environ["DWAC_CACHE_DIR"]
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
