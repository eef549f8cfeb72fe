"""Compile budgets: a request's compile stops past its time or memory budget with the CLI's
message, gives back what it allocated, and a ``Compiler`` remembers the refusal so the same
request fails at once."""

import json
import pathlib
import time

import pytest

import dwac

ROOT = pathlib.Path(__file__).resolve().parents[3]
# 500 real Glaive tools as one JSON Schema: seconds of compiling and hundreds of MiB.
HEAVY = (ROOT / "schemas/large/tools-500.json").read_text()
SMALL = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.fixture(scope="module")
def tok():
    return dwac.Tokenizer.default()


def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_the_defaults_are_server_sized(tok):
    assert (dwac.DEFAULT_MAX_SECONDS, dwac.DEFAULT_MAX_MEMORY_MB) == (10.0, 2048)
    info = dwac.Compiler(tok).cache_info()
    assert (info["max_seconds"], info["max_memory_mb"]) == (10.0, 2048)
    # A small schema compiles well within them.
    g = dwac.Grammar.from_json_schema(SMALL, tok)
    assert g.vocab_size == tok.num_tokens


def test_past_its_time_budget_a_compile_stops_at_once(tok):
    t = time.perf_counter()
    with pytest.raises(dwac.DwacError) as e:
        dwac.Grammar.from_json_schema(HEAVY, tok, max_seconds=0.05)
    took = time.perf_counter() - t
    assert "schema: compilation exceeded its time budget of 0.05 s (max_seconds)" in str(e.value)
    assert took < 2.0, f"stopped after {took:.2f} s"


def test_past_its_memory_budget_a_compile_stops_and_gives_the_memory_back(tok):
    before = rss_mb()
    with pytest.raises(dwac.DwacError) as e:
        dwac.Grammar.from_json_schema(HEAVY, tok, max_seconds=None, max_memory_mb=64)
    assert "compilation exceeded its memory budget of 64 MiB (max_memory_mb)" in str(e.value)
    # (What the compile allocated is freed and handed back, not kept by the allocator.)
    assert rss_mb() < before + 64, (before, rss_mb())


def test_a_compiler_remembers_a_refusal(tok):
    c = dwac.Compiler(tok, max_seconds=0.05)
    with pytest.raises(dwac.DwacError, match="time budget of 0.05 s"):
        c.json_schema(HEAVY)
    t = time.perf_counter()
    with pytest.raises(dwac.DwacError, match="time budget of 0.05 s"):
        c.json_schema(HEAVY)
    assert time.perf_counter() - t < 0.05, "the second refusal compiled again"
    info = c.cache_info()
    assert (info["misses"], info["hits"], info["refusals"]) == (1, 1, 1), info
    # Bad sources too, and a refusal does not stand for other sources or options.
    for _ in range(2):
        with pytest.raises(dwac.DwacError, match="not valid JSON"):
            c.json_schema("{")
    assert c.cache_info()["refusals"] == 2
    assert c.json_schema(SMALL)._g is c.json_schema(SMALL)._g
    c.clear()
    with pytest.raises(dwac.DwacError):
        c.json_schema(HEAVY)
    assert c.cache_info()["misses"] == 4


def test_a_refusal_holds_for_its_budget_only(tok):
    tight = dwac.Compiler(tok, max_seconds=0.05)
    with pytest.raises(dwac.DwacError):
        tight.json_schema(HEAVY)
    # Without a limit the same request compiles (the two compilers share nothing).
    roomy = dwac.Compiler(tok, max_seconds=None, max_memory_mb=None)
    tools = json.loads(HEAVY)["anyOf"][:20]
    g = roomy.json_schema({"anyOf": tools})
    assert g.num_tokens == tok.num_tokens


def test_bad_budgets_are_refused(tok):
    for kw in ({"max_seconds": 0}, {"max_seconds": -1.0}, {"max_seconds": float("nan")}, {"max_memory_mb": 0}):
        with pytest.raises(dwac.DwacError, match="must be a positive"):
            dwac.Grammar.from_json_schema(SMALL, tok, **kw)
        with pytest.raises(dwac.DwacError, match="must be a positive"):
            dwac.Compiler(tok, **kw)


def test_every_source_kind_takes_a_budget(tok):
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": json.loads(HEAVY)}}
    with pytest.raises(dwac.DwacError, match="structural tag: compilation exceeded its time budget"):
        dwac.Grammar.from_structural_tag(tag, tok, max_seconds=0.05)
    tools = [{"type": "function", "function": {"name": f"f{i}", "parameters": b["properties"]["arguments"]}}
             for i, b in enumerate(json.loads(HEAVY)["anyOf"])]
    with pytest.raises(dwac.DwacError, match="time budget of 0.05 s"):
        dwac.Grammar.from_tools(tools, tok, format="hermes", max_seconds=0.05)
    assert dwac.Grammar.from_lark('start: "a"+\n', tok, max_seconds=5.0).num_tokens == tok.num_tokens
    assert dwac.Grammar.from_gbnf('root ::= "a"+\n', tok, max_memory_mb=256).num_tokens == tok.num_tokens
    assert dwac.Grammar.from_regex("[0-9]+", tok, max_seconds=None).num_tokens == tok.num_tokens
