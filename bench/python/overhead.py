#!/usr/bin/env python3
"""Python call overhead and batch fill, dwac next to llguidance and XGrammar, on the same
MaskBench traces in one process.

Usage: python bench/python/overhead.py --tokenizer ../shared/data/tokenizers/qwen3/tokenizer.json
           [--schemas 25] [--peers llguidance,xgrammar] [--batch 64,256,1024] [--threads 1,2]
           [--out overhead.json]

Per step, from Python: `fill_next_token_bitmask(bitmask)` then `accept_token(id)` (llguidance:
`llguidance.numpy.fill_next_token_bitmask` then `consume_token`), timed with perf_counter_ns
around each call, so each number includes the interpreter's call overhead. Traces: the valid
MaskBench instances of the first N schemas of Glaiveai2K and of Github_easy that every engine
compiles, serialized like `json.dumps` (", " and ": "), tokenized by dwac's tokenizer; the
same ids go to every engine (XGrammar: compile_json_schema with any_whitespace and
strict_mode, its tokenizer info built as the xgrammar peer of `cargo xtask bench` builds it).

Every engine compiles a schema once, untimed, and starts each trace (and each batch row) from
that: dwac and XGrammar make a matcher of the compiled grammar; llguidance, as its docs
advise, builds one `LLMatcher` per schema and `deep_copy()`s it. Before timing, each engine
replays one trace untimed (warm-up), and before a batch loop each engine fills one batch
untimed (its thread pool started). A peer in `--peers` that does not import is an error.

Batch: B matchers (traces cycled), every batch step filled in one call (dwac:
`fill_next_token_bitmask_batch`, rayon with RAYON_NUM_THREADS threads; llguidance:
`fill_next_token_bitmask_par` on an `LLExecutor(num_threads)`; XGrammar:
`BatchGrammarMatcher(max_threads).batch_fill_next_token_bitmask`), then each matcher commits its
next token (untimed); a thread count runs in a subprocess of its own (rayon's pool is sized
once per process). Rejected traces (a trace token the engine refuses) are counted per engine.
Needs numpy, dwac and the peers named installed."""

import argparse
import gc
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
MASKBENCH = ROOT.parent / "shared/data/jsonschemabench/maskbench/data"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def summary(us):
    return {k: round(pct(us, p), 2) for k, p in [("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9), ("max", 100)]}


def load(n):
    out = []
    for split in ("Glaiveai2K", "Github_easy"):
        files = sorted(MASKBENCH.glob(f"{split}---*.json"))[:n]
        for f in files:
            d = json.loads(f.read_text())
            docs = [json.dumps(t["data"]) for t in d["tests"] if t.get("valid")]
            if docs:
                out.append((f.stem, d["schema"], docs))
    return out


PEERS = ("llguidance", "xgrammar")


def engines(tok_path, peers):
    import dwac

    dtok = dwac.Tokenizer.from_file(tok_path)

    class Dwac:
        name = "dwac"

        def compile(self, schema):
            return dwac.Grammar.from_json_schema(schema, dtok)

        def matcher(self, g):
            return dwac.Matcher(g)

        def fill(self, m, bm, i=0):
            m.fill_next_token_bitmask(bm, i)

        def accept(self, m, t):
            return m.accept_token(t)

        def start_pool(self, threads):
            pass  # (rayon's global pool starts with the first batch call)

        def batch(self, ms, bm, threads):
            dwac.fill_next_token_bitmask_batch(ms, bm)

    class LLG:
        name = "llguidance"

        def __init__(self):
            import llguidance
            import llguidance.numpy as lln

            self.llg, self.lln = llguidance, lln
            self.tok = llguidance.LLTokenizer(pathlib.Path(tok_path).read_text(), eos_token=dtok.eos_token_ids[0])
            self.ex, self.threads = None, None

        def compile(self, schema):
            # One matcher per schema, built once; traces and batch rows start from deep copies.
            g = self.llg.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": True})
            m = self.llg.LLMatcher(self.tok, g, log_level=0)
            if m.is_error():
                raise ValueError(m.get_error())
            return m

        def matcher(self, g):
            return g.deep_copy()

        def fill(self, m, bm, i=0):
            self.lln.fill_next_token_bitmask(m, bm, i)

        def accept(self, m, t):
            return m.consume_token(t)

        def start_pool(self, threads):
            if self.threads != threads:
                self.ex, self.threads = self.llg.LLExecutor(num_threads=threads), threads

        def batch(self, ms, bm, threads):
            self.start_pool(threads)
            self.lln.fill_next_token_bitmask_par(self.ex, [(m, i) for i, m in enumerate(ms)], bm)

    class XGR:
        name = "xgrammar"

        def __init__(self):
            import importlib.util

            import xgrammar as xgr

            # (The tokenizer info exactly as the xgrammar peer of `cargo xtask bench` builds it.)
            spec = importlib.util.spec_from_file_location("xgr_peer", ROOT / "bench/peers/xgrammar/bench.py")
            peer = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(peer)
            info = peer.build_tokenizer_info(xgr, tok_path, dtok.eos_token_ids)[0]
            self.xgr = xgr
            self.compiler = xgr.GrammarCompiler(info, cache_enabled=False)

        def compile(self, schema):
            return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=True)

        def matcher(self, g):
            return self.xgr.GrammarMatcher(g)

        def fill(self, m, bm, i=0):
            m.fill_next_token_bitmask(bm, i)

        def accept(self, m, t):
            return m.accept_token(t)

        def start_pool(self, threads):
            if getattr(self, "threads", None) != threads:
                self.bm, self.threads = self.xgr.BatchGrammarMatcher(max_threads=threads), threads

        def batch(self, ms, bm, threads):
            self.start_pool(threads)
            self.bm.batch_fill_next_token_bitmask(ms, bm)

    make = {"llguidance": LLG, "xgrammar": XGR}
    engs = [Dwac()]
    for p in peers:
        try:
            engs.append(make[p]())
        except ImportError as e:
            raise SystemExit(f"peer {p} does not import ({e}); install it or leave it out of --peers") from e
    return dtok, engs


def compiled(args, dtok, engs):
    """(grammars per engine, traces) of the schemas every engine compiles."""
    jobs = []
    for _, schema, docs in load(args.schemas):
        try:
            gs = [e.compile(schema) for e in engs]
        except Exception:
            continue
        jobs.append((gs, [dtok.encode(d) for d in docs]))
    return jobs


def warm_up(e, g, trace, bm):
    """One trace replayed untimed (first calls, allocations, lazily built state)."""
    m = e.matcher(g)
    for t in trace:
        e.fill(m, bm)
        if not e.accept(m, t):
            break


def time_traces(jobs, k, e, bm):
    """Every trace through engine `e` (grammar `k` of each job), each step timed from Python."""
    fill, acc, both, first, rejected, traces = [], [], [], [], 0, 0
    gc.disable()
    for gs, trs in jobs:
        for tr in trs:
            traces += 1
            m = e.matcher(gs[k])
            for i, t in enumerate(tr):
                t0 = time.perf_counter_ns()
                e.fill(m, bm)
                t1 = time.perf_counter_ns()
                ok = e.accept(m, t)
                t2 = time.perf_counter_ns()
                fill.append((t1 - t0) / 1e3)
                acc.append((t2 - t1) / 1e3)
                both.append((t2 - t0) / 1e3)
                if i == 0:
                    first.append((t1 - t0) / 1e3)
                if not ok:
                    rejected += 1
                    break
    gc.enable()
    return {
        "traces": traces,
        "steps": len(both),
        "rejected_traces": rejected,
        "fill_us": summary(fill),
        "accept_us": summary(acc),
        "step_us": summary(both),
        "first_fill_us": summary(first),
    }


def steps(args):
    dtok, engs = engines(args.tokenizer, args.peer_list)
    n = dtok.vocab_size
    jobs = compiled(args, dtok, engs)
    res = {"schemas": len(jobs), "tokenizer": dtok.name, "engines": [e.name for e in engs]}
    bm = np.full((1, (n + 31) // 32), -1, dtype=np.int32)
    gs0, trs0 = jobs[0]
    for k, e in enumerate(engs):
        warm_up(e, gs0[k], trs0[0], bm)
        res[e.name] = time_traces(jobs, k, e, bm)
    # dwac's own Rust numbers on the same traces, in the same process: each step's fill and
    # commit timed inside Rust, with no Python between them (after the Python pass: warm).
    import dwac

    fill, acc, both, first, rejected, traces = [], [], [], [], 0, 0
    for gs, trs in jobs:
        for tr in trs:
            traces += 1
            f, c = dwac._dwac._time_trace(dwac.Matcher(gs[0]), tr)
            fill += [x / 1e3 for x in f]
            acc += [x / 1e3 for x in c]
            both += [(a + b) / 1e3 for a, b in zip(f, c)]
            first += [f[0] / 1e3] if f else []
            rejected += len(f) < len(tr)
    res["dwac-rust"] = {
        "traces": traces,
        "steps": len(both),
        "rejected_traces": rejected,
        "fill_us": summary(fill),
        "accept_us": summary(acc),
        "step_us": summary(both),
        "first_fill_us": summary(first),
    }
    return res


GBNF_TTFM = ("json", "arithmetic", "list", "chess", "english", "japanese")


def ttfm(args):
    """Time to first mask with the tokenizer loaded: compile + matcher + first fill, per schema
    (the MaskBench schemas every engine compiles, each engine's compile cache off: dwac's
    ``Grammar.from_json_schema`` keeps none, XGrammar's compiler is built with
    ``cache_enabled=False``, llguidance builds its matcher afresh), and per llama.cpp GBNF grammar
    (dwac and XGrammar, which read GBNF). The first schema and grammar are timed untimed first
    (warm-up), then every one once, in turn across the engines."""
    import dwac

    dtok, engs = engines(args.tokenizer, args.peer_list)
    bm = np.full((1, (dtok.vocab_size + 31) // 32), -1, dtype=np.int32)
    schemas = [s for _, s, _ in load(args.schemas)]
    out = {"schemas": 0, "grammars": 0}
    times = {e.name: [] for e in engs}

    def once(e, compile_it):
        t = time.perf_counter()
        g = compile_it()
        m = e.matcher(g)
        e.fill(m, bm)
        return (time.perf_counter() - t) * 1e3

    for e in engs:
        try:
            once(e, lambda: e.compile(schemas[0]))
        except Exception:
            pass
    for schema in schemas:
        row = {}
        for e in engs:
            try:
                row[e.name] = once(e, lambda: e.compile(schema))
            except Exception:
                break
        if len(row) == len(engs):
            out["schemas"] += 1
            for k, v in row.items():
                times[k].append(v)
    out["schema_ms"] = {k: summary(v) for k, v in times.items()}
    # GBNF (llama.cpp's grammars): dwac and XGrammar.
    gbnf = ROOT.parent / "shared/data/grammars/llama.cpp"
    texts = [(gbnf / f"{n}.gbnf").read_text() for n in GBNF_TTFM]
    comp = {"dwac": lambda t: dwac.Grammar.from_gbnf(t, dtok)}
    for e in engs:
        if e.name == "xgrammar":
            comp["xgrammar"] = lambda t, e=e: e.compiler.compile_grammar(t)
    gtimes = {k: [] for k in comp}
    by_name = {e.name: e for e in engs}
    for k, c in comp.items():
        try:
            once(by_name[k], lambda: c(texts[0]))
        except Exception:
            pass
    for rep in range(3):
        for t in texts:
            row = {}
            for k, c in comp.items():
                try:
                    row[k] = once(by_name[k], lambda: c(t))
                except Exception:
                    break
            if len(row) == len(comp):
                out["grammars"] += rep == 0
                for k, v in row.items():
                    gtimes[k].append(v)
    out["gbnf_ms"] = {k: summary(v) for k, v in gtimes.items()}
    return out


def batch(args, threads):
    dtok, engs = engines(args.tokenizer, args.peer_list)
    n = dtok.vocab_size
    jobs = [(gs, tr) for gs, traces in compiled(args, dtok, engs) for tr in traces]
    out = {}
    for B in [int(b) for b in args.batch.split(",")]:
        sel = [jobs[i % len(jobs)] for i in range(B)]
        length = min(40, min(len(tr) for _, tr in sel))
        bm = np.zeros((B, (n + 31) // 32), dtype=np.int32)
        for k, e in enumerate(engs):
            # Untimed: the thread pool started and one batch filled, on matchers of their own.
            e.start_pool(threads)
            e.batch([e.matcher(gs[k]) for gs, _ in sel], bm, threads)
            ms = [e.matcher(gs[k]) for gs, _ in sel]
            times, rejected = [], set()
            for s in range(length):
                t0 = time.perf_counter_ns()
                e.batch(ms, bm, threads)
                times.append((time.perf_counter_ns() - t0) / 1e6)
                for row, (m, (_, tr)) in enumerate(zip(ms, sel)):
                    if not e.accept(m, tr[s]):
                        rejected.add(row)
            out.setdefault(f"B={B}", {})[e.name] = {
                "ms_per_batch_step": summary(times),
                "steps": length,
                "rows": B,
                "rejected_rows": len(rejected),
            }
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--schemas", type=int, default=25)
    ap.add_argument("--peers", default=",".join(PEERS), help="peers next to dwac, comma-separated (none: dwac alone)")
    ap.add_argument("--batch", default="64,256,1024")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--out")
    ap.add_argument("--batch-only-threads", type=int)
    args = ap.parse_args()
    args.peer_list = [p for p in args.peers.split(",") if p.strip() and p.strip() != "none"]
    for p in args.peer_list:
        if p not in PEERS:
            ap.error(f"unknown peer {p!r} (known: {', '.join(PEERS)})")
    if args.batch_only_threads:
        print(json.dumps(batch(args, args.batch_only_threads)))
        return
    report = {"steps": steps(args), "ttfm": ttfm(args), "batch": {}}
    for th in [int(t) for t in args.threads.split(",")]:
        env = dict(os.environ, RAYON_NUM_THREADS=str(th))
        cmd = [sys.executable, __file__, "--tokenizer", args.tokenizer, "--schemas", str(args.schemas), "--peers", args.peers]
        cmd += ["--batch", args.batch, "--batch-only-threads", str(th)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        report["batch"][f"threads={th}"] = json.loads(r.stdout.strip().splitlines()[-1])
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
