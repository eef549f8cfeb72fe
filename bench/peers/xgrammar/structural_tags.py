"""Structural tags of 10, 100 and 500 real tools, timed in XGrammar (issue 39's workload).

    python structural_tags.py make OUT_DIR        # tools-N.json (structural tags) + tools-N.jsonl (texts)
    <xgrammar venv>/bin/python structural_tags.py time OUT_DIR TOKENIZER_JSON EOS_IDS
    <xgrammar venv>/bin/python structural_tags.py compare OUT_DIR TOKENIZER_JSON [XGRAMMAR_THREADS [SIZES]]

`make` builds, from the Glaive tools of `schemas/large/tools-{10,100,500}.json`, a Hermes/Qwen
`triggered_tags` structural tag (one tag per tool: `<tool_call>\\n{"name": "<tool>", "arguments": `,
the tool's argument schema, `}\\n</tool_call>`) and up to 20 texts per set (a tool's instance
between free text). dwac's side of the same run:

    dwac compile OUT_DIR/tools-N.json --structural-tag --tokenizer TOKENIZER_JSON -o OUT_DIR/tools-N.dwa
    dwac bench OUT_DIR/tools-N.dwa --tokenizer TOKENIZER_JSON --jsonl OUT_DIR/tools-N.jsonl

`compare` times the compile of each tag in XGrammar and in dwac (`dwac.Grammar.from_structural_tag`,
the package installed in that venv, e.g. by `cargo dwac-bench py-bench`) in one process, the
tokenizer loaded, rounds alternated (the first dwac round is cold: its process caches are empty):

    <xgrammar venv>/bin/python structural_tags.py compare OUT_DIR TOKENIZER_JSON [XGRAMMAR_THREADS [SIZES]]

XGRAMMAR_THREADS (default 2: dwac compiles on two threads) is XGrammar's `max_threads`; SIZES a
comma-separated subset of 10,100,500 (default 10,100).

`time` (EOS_IDS comma-separated, e.g. the `eos` that `dwac inspect` shows for an artifact
compiled with that tokenizer) compiles each tag with `compile_structural_tag` (one thread, no cache) and times every
`fill_next_token_bitmask` along the texts (from Python), with the TokenizerInfo of `bench.py`.
"""

import json
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SIZES = (10, 100, 500)


def make(out):
    os.makedirs(out, exist_ok=True)
    for n in SIZES:
        schema = json.load(open(os.path.join(ROOT, f"schemas/large/tools-{n}.json")))
        tags, names = [], set()
        for branch in schema["anyOf"]:
            name = branch["properties"]["name"]["const"]
            names.add(name)
            tags.append({
                "type": "tag",
                "begin": '<tool_call>\n{"name": "%s", "arguments": ' % name,
                "content": {"type": "json_schema", "json_schema": branch["properties"].get("arguments", {"type": "object"})},
                "end": "}\n</tool_call>",
            })
        tag = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": tags}}
        json.dump(tag, open(os.path.join(out, f"tools-{n}.json"), "w"))
        k = 0
        with open(os.path.join(out, f"tools-{n}.jsonl"), "w") as f:
            for line in open(os.path.join(ROOT, f"schemas/large/tools-{n}.instances.jsonl")):
                d = json.loads(line)
                d = d.get("instance", d)
                if d["name"] not in names:
                    continue
                args = json.dumps(d["arguments"], ensure_ascii=False)
                text = 'Let me look that up for you.\n<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call>\nI called the tool.' % (d["name"], args)
                f.write(json.dumps({"text": text, "valid": True}) + "\n")
                k += 1
                if k >= 20:
                    break
        print(f"tools-{n}: {len(tags)} tags, {k} texts")


def time_xgrammar(out, tok_path, eos_ids):
    sys.path.insert(0, os.path.dirname(__file__))
    import bench
    import xgrammar as xgr
    from tokenizers import Tokenizer

    eos = [int(x) for x in eos_ids.split(",")]
    info = bench.build_tokenizer_info(xgr, tok_path, eos)[0]
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    tk = Tokenizer.from_file(tok_path)
    for n in SIZES:
        tag = json.load(open(os.path.join(out, f"tools-{n}.json")))
        t0 = time.perf_counter()
        compiled = compiler.compile_structural_tag(json.dumps(tag))
        compile_ms = (time.perf_counter() - t0) * 1e3
        bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
        lat, rejected = [], 0
        for line in open(os.path.join(out, f"tools-{n}.jsonl")):
            ids = tk.encode(json.loads(line)["text"], add_special_tokens=False).ids
            m = xgr.GrammarMatcher(compiled)
            for t in ids:
                s = time.perf_counter_ns()
                m.fill_next_token_bitmask(bitmask)
                lat.append((time.perf_counter_ns() - s) / 1e3)
                if not m.accept_token(t):
                    rejected += 1
                    break
        lat.sort()
        q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
        print(f"xgrammar tools-{n}: compile {compile_ms:.0f} ms; mask us p50 {q(.5):.1f} p99 {q(.99):.1f} "
              f"p99.9 {q(.999):.1f} max {lat[-1]:.1f} ({len(lat)} masks, {rejected} texts rejected)")


def compare(out, tok_path, threads=2, sizes=(10, 100), rounds=3):
    sys.path.insert(0, os.path.dirname(__file__))
    import bench
    import dwac
    import xgrammar as xgr

    dtok = dwac.Tokenizer.from_file(tok_path)
    info = bench.build_tokenizer_info(xgr, tok_path, list(dtok.eos_token_ids))[0]
    compiler = xgr.GrammarCompiler(info, max_threads=threads, cache_enabled=False)
    for n in sizes:
        tag = json.load(open(os.path.join(out, f"tools-{n}.json")))
        text = json.dumps(tag)
        for r in range(rounds):
            t0 = time.perf_counter()
            compiler.compile_structural_tag(text)
            x = (time.perf_counter() - t0) * 1e3
            t0 = time.perf_counter()
            dwac.Grammar.from_structural_tag(tag, dtok)
            d = (time.perf_counter() - t0) * 1e3
            print(f"tools-{n} round {r + 1}: xgrammar ({threads} threads) {x:.0f} ms, dwac {d:.0f} ms", flush=True)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        threads = int(sys.argv[4]) if len(sys.argv) >= 5 else 2
        sizes = tuple(int(x) for x in sys.argv[5].split(",")) if len(sys.argv) >= 6 else (10, 100)
        compare(sys.argv[2], sys.argv[3], threads, sizes)
    elif len(sys.argv) >= 5 and sys.argv[1] == "time":
        time_xgrammar(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
