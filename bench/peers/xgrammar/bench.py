#!/usr/bin/env python3
"""xgrammar peer for dwac's mask/commit latency bench (same token ids as dwac).

Usage: python3 bench.py bench --tokenizer tokenizer.json --jobs JOBS.jsonl --replays N
                             --out OUT.jsonl --eos ID[,ID...] [--popcount]
(bench/peers/xgrammar/setup.sh makes the venv target/peers/xgrammar-venv; started by any other
interpreter, bench.py re-executes itself with the venv's python; DWAC_XGRAMMAR_VENV overrides
the venv path).

JOBS.jsonl has one job a line, {"id", "kind": "json" | "schema" | "grammar" | "tags", "schema"?, "grammar"?,
"format"?, "traces": [[ids]]};
OUT.jsonl gets a first {"event": "env", ...} line, then one result line per job: per-step times
of the first replay and the minimum over replays, counters of rejected traces, trace tokens
missing from the mask and final masks without an EOS bit.

How xgrammar (PyPI, public Python API, nothing copied) is driven:
- TokenizerInfo, built from tokenizer.json without transformers, the same way
  `TokenizerInfo.from_huggingface` does for a fast tokenizer: the vocabulary is
  `tokenizers.Tokenizer.from_file(path).get_vocab(with_added_tokens=True)` laid out by id
  (the encoded, i.e. `Ġ`/`▁`/`<0xNN>`, token strings); vocab type and add_prefix_space come
  from xgrammar's own detector on the backend JSON (`TokenizerInfo._detect_metadata_from_hf`),
  overridden by `TokenizerInfo._detect_vocab_type_from_vocab` when the two disagree (as
  from_huggingface does); then `xgr.TokenizerInfo(encoded_vocab, vocab_type, vocab_size=<id
  count of tokenizer.json>, stop_token_ids=EOS, add_prefix_space=...)`. xgrammar detects its
  special tokens (never allowed by a grammar) from the vocabulary itself.
- EOS: --eos (the driver's, the same for every engine); passed as `stop_token_ids`, so the
  matcher allows it exactly where the grammar may end.
- compiler: one `xgr.GrammarCompiler(info, cache_enabled=False)` for the run (default
  max_threads=8); the compile cache is off so that a schema or the builtin JSON grammar met
  twice is compiled (and timed) again instead of being served from the cache.
- grammar: kind "json" -> `compiler.compile_builtin_json_grammar()`; kind "schema" ->
  `compiler.compile_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=True)`
  (both are xgrammar's defaults). NOTE: xgrammar's builtin JSON grammar's root is an object or
  an array only (no top-level scalar) with no whitespace before it; inside, whitespace
  [ \n\r\t]* is free. `compile_ms` times that call (`compile_cpu_ms`: the process's CPU
  time over it, `time.process_time_ns`, every thread's); xgrammar compiles eagerly
  (its adaptive token-mask cache is built here), so `ttfm_ms` is null.
- per trace: `xgr.GrammarMatcher(compiled)` (untimed), then per token
  `matcher.fill_next_token_bitmask(bitmask)` into one bitmask from
  `xgr.allocate_token_bitmask(1, vocab_size)` (timed), the trace token's bit is read from a
  numpy view of the bitmask, `matcher.accept_token(id)` (timed; False = rejected, trace
  stopped); after the last token one more timed fill and the EOS bit check.
  Timing is `time.perf_counter_ns()` around the Python call, so each number includes the
  interpreter's call overhead; the env line's `python_overhead_ns` gives the median cost of
  timing a trivial call (`lambda: None`) and a trivial matcher method
  (`matcher.is_terminated()`). The garbage collector is paused while a job's replays run.
- --popcount adds `mask_popcount` (allowed tokens per mask of the first replay, counted outside
  the timed calls), to compare mask sizes across engines.
- `peak_rss_mb`: VmHWM of /proc/self/status after the job; the high-water mark is reset
  ("5" into /proc/self/clear_refs) before each job.
"""

import argparse
import gc
import json
import re
import os
import statistics
import sys
import time

def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def build_tokenizer_info(xgr, tok_path, eos):
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(tok_path)
    vocab_dict = tok.get_vocab(with_added_tokens=True)
    size = max(len(vocab_dict), max(vocab_dict.values()) + 1)
    encoded = [""] * size
    for t, i in vocab_dict.items():
        encoded[i] = t
    meta = xgr.TokenizerInfo._detect_metadata_from_hf(tok.to_str())
    vocab_type, add_prefix_space = meta["vocab_type"], meta["add_prefix_space"]
    from_vocab = xgr.TokenizerInfo._detect_vocab_type_from_vocab(vocab_dict)
    if from_vocab is not None and from_vocab != vocab_type:
        vocab_type = from_vocab
        first = tok.encode("a", add_special_tokens=False).tokens
        prefix = "▁" if vocab_type == xgr.VocabType.BYTE_FALLBACK else "Ġ"
        add_prefix_space = bool(first) and first[0].startswith(prefix)
    info = xgr.TokenizerInfo(
        encoded,
        vocab_type=vocab_type,
        vocab_size=size,
        stop_token_ids=list(eos),
        add_prefix_space=add_prefix_space,
    )
    return info, size, vocab_type, add_prefix_space


def median_call_ns(fn, n=20001):
    pc = time.perf_counter_ns
    xs = []
    for _ in range(n):
        t0 = pc()
        fn()
        xs.append(pc() - t0)
    return statistics.median(xs)


def python_overhead(xgr, compiler):
    pc = time.perf_counter_ns
    xs = []
    for _ in range(20001):
        t0 = pc()
        xs.append(pc() - t0)
    timer_only = statistics.median(xs)
    f = lambda: None  # noqa: E731
    lam = median_call_ns(f)
    m = xgr.GrammarMatcher(compiler.compile_grammar('root ::= "a"'))
    xs = []
    for _ in range(20001):
        t0 = pc()
        m.is_terminated()
        xs.append(pc() - t0)
    method = statistics.median(xs)
    return {"timer_only": timer_only, "lambda_call": lam, "matcher_is_terminated": method}


def bit(bm, tok):
    return (int(bm[0, tok >> 5]) >> (tok & 31)) & 1 == 1


def popcount(bm):
    import numpy as np

    return int(np.unpackbits(bm.view(np.uint8)).sum())


def run_pass(xgr, compiled, traces, eos, bitmask, bm, counts=None):
    pc = time.perf_counter_ns
    mask_us, commit_us = [], []
    rejected = not_in_mask = eos_missing = 0
    errors = []
    trace_masks, trace_commits = [], []
    for trace in traces:
        m0, c0 = len(mask_us), len(commit_us)
        try:
            matcher = xgr.GrammarMatcher(compiled)
            ok = True
            for tok in trace:
                t0 = pc()
                matcher.fill_next_token_bitmask(bitmask)
                t1 = pc()
                mask_us.append((t1 - t0) / 1e3)
                if counts is not None:
                    counts.append(popcount(bm))
                if not bit(bm, tok):
                    not_in_mask += 1
                t0 = pc()
                accepted = matcher.accept_token(tok)
                t1 = pc()
                commit_us.append((t1 - t0) / 1e3)
                if not accepted:
                    rejected += 1
                    ok = False
                    break
            if ok:
                t0 = pc()
                matcher.fill_next_token_bitmask(bitmask)
                t1 = pc()
                mask_us.append((t1 - t0) / 1e3)
                if counts is not None:
                    counts.append(popcount(bm))
                if not any(bit(bm, e) for e in eos):
                    eos_missing += 1
        except Exception as e:  # noqa: BLE001
            rejected += 1
            errors.append(f"{type(e).__name__}: {e}")
        trace_masks.append(len(mask_us) - m0)
        trace_commits.append(len(commit_us) - c0)
    return mask_us, commit_us, rejected, not_in_mask, eos_missing, errors, (trace_masks, trace_commits)


def run_job(xgr, compiler, eos, replays, bitmask, bm, job, want_popcount=False):
    jid = job.get("id")
    kind = job.get("kind", "schema")
    traces = [list(map(int, t)) for t in job.get("traces") or []]
    reset_peak_rss()
    pc = time.perf_counter_ns
    cpu0 = time.process_time_ns()  # the process's CPU time, every thread's
    t0 = pc()
    try:
        if kind == "json":
            compiled = compiler.compile_builtin_json_grammar()
        elif kind in ("grammar", "tags"):
            # GBNF text, XGrammar's EBNF dialect (it takes llama.cpp's grammars as written), or
            # a structural tag; other formats are not XGrammar's.
            if job.get("format") == "structural_tag":
                compiled = compiler.compile_structural_tag(job["grammar"])
            elif job.get("format") != "gbnf":
                raise ValueError(f"grammar format {job.get('format')!r} is not XGrammar's")
            else:
                # XGrammar refuses llama.cpp's empty first alternative (`ws ::= | " " | ...`,
                # json.gbnf's and the JSON-Schema converter's): the same language written `""`.
                compiled = compiler.compile_grammar(re.sub(r"::=(\s*)\|", r'::=\1"" |', job["grammar"]))
        else:
            compiled = compiler.compile_json_schema(
                json.dumps(job["schema"]), any_whitespace=True, strict_mode=True
            )
    except Exception as e:  # noqa: BLE001
        return {
            "id": jid,
            "compiled": False,
            "compile_ms": (pc() - t0) / 1e6,
            "error": f"{type(e).__name__}: {e}",
        }
    compile_ms = (pc() - t0) / 1e6
    compile_cpu_ms = (time.process_time_ns() - cpu0) / 1e6
    counts = [] if want_popcount else None
    gc.collect()
    gc.disable()
    try:
        mask_us, commit_us, rejected, not_in_mask, eos_missing, errors, per_trace = run_pass(
            xgr, compiled, traces, eos, bitmask, bm, counts
        )
        mask_min, commit_min = list(mask_us), list(commit_us)
        for _ in range(1, max(replays, 1)):
            m, c, *_ = run_pass(xgr, compiled, traces, eos, bitmask, bm)
            mask_min = [min(a, b) for a, b in zip(mask_min, m)] + mask_min[len(m):]
            commit_min = [min(a, b) for a, b in zip(commit_min, c)] + commit_min[len(c):]
    finally:
        gc.enable()
    r = {
        "id": jid,
        "compiled": True,
        "compile_ms": compile_ms,
        "compile_cpu_ms": compile_cpu_ms,
        "ttfm_ms": None,
        "mask_us": mask_us,
        "mask_us_min": mask_min,
        "commit_us": commit_us,
        "commit_us_min": commit_min,
        "trace_masks": per_trace[0],
        "trace_commits": per_trace[1],
        "masks": len(mask_us),
        "commits": len(commit_us),
        "rejected_traces": rejected,
        "token_not_in_mask": not_in_mask,
        "eos_not_in_mask": eos_missing,
        "errors": errors[:20],
        "peak_rss_mb": peak_rss_mb(),
    }
    if counts is not None:
        r["mask_popcount"] = counts
    return r


def reexec_in_venv():
    """Run under the bench venv (made by setup.sh) when started by another interpreter."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    venv = os.environ.get("DWAC_XGRAMMAR_VENV") or os.path.join(root, "target", "peers", "xgrammar-venv")
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv) and os.path.exists(py):
        os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def main(argv):
    reexec_in_venv()
    if not argv or argv[0] != "bench":
        raise SystemExit(
            "usage: bench.py bench --tokenizer tokenizer.json --jobs JOBS.jsonl --replays N "
            "--out OUT.jsonl --eos ID[,ID...] [--popcount]"
        )
    ap = argparse.ArgumentParser(prog="bench.py bench")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--jobs", required=True)
    ap.add_argument("--replays", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--eos", required=True)
    ap.add_argument("--popcount", action="store_true")
    a = ap.parse_args(argv[1:])

    import numpy  # noqa: F401  (the bitmask's numpy view)
    import xgrammar as xgr
    from importlib.metadata import version

    eos = [int(x) for x in a.eos.split(",")]

    t0 = time.perf_counter_ns()
    info, size, vocab_type, add_prefix_space = build_tokenizer_info(xgr, a.tokenizer, eos)
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    setup_ms = (time.perf_counter_ns() - t0) / 1e6
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    bm = bitmask.numpy()
    overhead = python_overhead(xgr, compiler)

    with open(a.out, "w", encoding="utf-8") as out:
        env = {
            "event": "env",
            "peer": "xgrammar",
            "version": version("xgrammar"),
            "vocab_size": info.vocab_size,
            "eos": list(info.stop_token_ids),
            "python_overhead_ns": overhead,
            "setup_ms": setup_ms,
            "vocab_type": vocab_type.name,
            "add_prefix_space": add_prefix_space,
            "special_token_ids": len(info.special_token_ids),
            "replays": a.replays,
            "python": sys.version.split()[0],
            "language": {
                "json": "builtin JSON grammar: an object or array at the top, free [ \\n\\r\\t]* inside",
                "schema": "the schema, any_whitespace=True",
                "grammar": "the GBNF grammar as written (compile_grammar; an empty first alternative written \"\")",
                "tags": "the structural tag as written (compile_structural_tag)",
            },
        }
        out.write(json.dumps(env) + "\n")
        out.flush()
        with open(a.jobs, encoding="utf-8") as jobs:
            for line in jobs:
                if not line.strip():
                    continue
                job = json.loads(line)
                r = run_job(xgr, compiler, eos, a.replays, bitmask, bm, job, a.popcount)
                out.write(json.dumps(r) + "\n")
                out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
