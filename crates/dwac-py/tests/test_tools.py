"""Tool calling against the real chat templates: qwen3's and DeepSeek-R1's templates (rendered
with jinja2 from the tokenizers' own ``tokenizer_config.json``) write assistant turns with tool
calls; the grammar ``dwac.tools`` builds for that family must accept exactly those turns, token
by token as the model would write them, under each ``tool_choice``. And the compile cache:
``dwac.Compiler`` returns the grammar compiled before, evicts by bytes, and compiles a source
once when threads ask for it together."""

import json
import pathlib
import threading

import jinja2
import pytest

import dwac

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOKENIZERS = ROOT.parent / "shared" / "data" / "tokenizers"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "additionalProperties": False},
        },
    },
]
WEATHER = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}
TIME = {"name": "get_time", "arguments": {"tz": "Europe/Paris"}}


def template(name):
    cfg = json.loads((TOKENIZERS / name / "tokenizer_config.json").read_text())
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x: json.dumps(x, ensure_ascii=False)
    return env.from_string(cfg["chat_template"])


def accepts(grammar, tok, text):
    m = dwac.Matcher(grammar)
    return all(m.accept_token(t) for t in tok.encode(text)) and m.accept_token(tok.eos_token_ids[0])


def qwen3_turn(content, calls, reasoning):
    """The assistant turn qwen3's template writes (between ``<|im_start|>assistant\\n`` and
    ``<|im_end|>``)."""
    msg = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if calls:
        msg["tool_calls"] = [{"type": "function", "function": c} for c in calls]
    out = template("qwen3").render(
        messages=[{"role": "user", "content": "Weather and time in Paris?"}, msg], tools=TOOLS, add_generation_prompt=False
    )
    turn = out.rsplit("<|im_start|>assistant\n", 1)[1]
    assert turn.endswith("<|im_end|>\n")
    return turn[: -len("<|im_end|>\n")]


def deepseek_turn(content, calls):
    """The assistant turn DeepSeek-R1's template writes (after ``<｜Assistant｜>``, before the
    end token)."""
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            {"type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in calls
        ]
    out = template("deepseek-r1").render(
        messages=[{"role": "user", "content": "Weather and time in Paris?"}, msg],
        bos_token="<｜begin▁of▁sentence｜>",
        add_generation_prompt=False,
    )
    turn = out.rsplit("<｜Assistant｜>", 1)[1]
    assert turn.endswith("<｜end▁of▁sentence｜>")
    return turn[: -len("<｜end▁of▁sentence｜>")]


@pytest.mark.parametrize("family", ["qwen3", "deepseek-r1"])
def test_the_chat_templates_turns_are_accepted_under_each_tool_choice(family):
    tok = dwac.Tokenizer.from_file(TOKENIZERS / family / "tokenizer.json")
    reasoning = family == "qwen3"  # qwen3's template always writes the reasoning block

    def turn(content, calls):
        if family == "qwen3":
            return qwen3_turn(content, calls, "The user asks for two things.")
        return deepseek_turn(content, calls)

    turns = {
        "text": turn("It is sunny in Paris.", []),
        "one call": turn(None if family != "qwen3" else "", [WEATHER]),
        "two calls": turn(None if family != "qwen3" else "", [WEATHER, TIME]),
        "text then a call": turn("Let me check.", [TIME]),
        "bad arguments": turn(None if family != "qwen3" else "", [{"name": "get_weather", "arguments": {"town": "X"}}]),
    }
    # The markers are the family's own single tokens (added tokens of its tokenizer).
    for marker in {"qwen3": ["<tool_call>", "</tool_call>", "<think>", "</think>"],
                   "deepseek-r1": ["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
                                   "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"]}[family]:
        assert marker in "".join(turns.values())
        assert len(tok.encode(marker)) == 1, marker
    expect = {
        "auto": {"text", "one call", "two calls", "text then a call"},
        "none": {"text"},
        "required": {"one call", "two calls"},
        "get_time": set(),
        "auto, one call at most": {"text", "one call", "text then a call"},
    }
    for choice, ok in expect.items():
        opts = {"tool_choice": choice.split(",")[0], "reasoning": reasoning}
        if "one call" in choice:
            opts["parallel_tool_calls"] = False
        g = dwac.Grammar.from_tools({"tools": TOOLS}, tok, format=family, **opts)
        for name, text in turns.items():
            assert accepts(g, tok, text) == (name in ok), f"{family} {choice}: {name}: {text!r}"
    # A named function: only calls of it.
    g = dwac.Grammar.from_tools(TOOLS, tok, format=family, tool_choice="get_time", reasoning=reasoning)
    assert accepts(g, tok, turn(None if family != "qwen3" else "", [TIME]))
    assert not accepts(g, tok, turn(None if family != "qwen3" else "", [WEATHER]))


def test_tools_structural_tag_and_its_errors():
    tag = dwac.tools.structural_tag(TOOLS, "hermes", tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert tag["type"] == "structural_tag" and "get_weather" not in json.dumps(tag)
    with pytest.raises(dwac.DwacError, match="/tools/0/function/name"):
        dwac.tools.structural_tag([{"type": "function", "function": {"name": "bad name"}}], "qwen3")
    with pytest.raises(dwac.DwacError, match="unknown tool format"):
        dwac.tools.structural_tag(TOOLS, "gpt-5")
    with pytest.raises(dwac.DwacError, match="nope"):
        dwac.tools.structural_tag(TOOLS, "llama3", tool_choice="nope")
    # Llama 3's `<|python_tag|>` is a special token: GPT-2 has none, and the compile says so.
    with pytest.raises(dwac.DwacError, match="python_tag"):
        dwac.Grammar.from_tools(TOOLS, None, format="llama3")


def test_the_compiler_caches_by_source_and_options():
    tok = dwac.Tokenizer.default()
    c = dwac.Compiler(tok)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    g1 = c.json_schema(schema)
    g2 = c.json_schema(json.dumps(schema))
    assert g1._g is g2._g, "the same text: the grammar compiled before"
    g3 = c.json_schema(schema, whitespace="compact")
    assert g3._g is not g1._g, "other options: another grammar"
    info = c.cache_info()
    assert (info["hits"], info["misses"], info["entries"]) == (1, 2, 2)
    assert info["bytes"] > 0
    t1 = c.tools(TOOLS, "qwen3", tool_choice="required")
    assert c.tools(TOOLS, "qwen3", tool_choice="required")._g is t1._g
    assert accepts(t1, tok, '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>')
    # Errors are remembered too: the second time, the same error without compiling.
    for _ in range(2):
        with pytest.raises(dwac.DwacError, match="not valid JSON"):
            c.json_schema('{"type": "object", "properties": ')
    assert c.cache_info()["entries"] == 4 and c.cache_info()["refusals"] == 1
    c.clear()
    assert c.cache_info()["entries"] == 0 and c.cache_info()["bytes"] == 0
    assert c.json_schema(schema)._g is not g1._g, "cleared: compiled again"


def test_the_compiler_evicts_the_least_recently_used(tmp_path):
    tok = dwac.Tokenizer.default()
    sizes = []
    for schema in ({"type": "integer"}, {"type": "boolean"}, {"type": "null"}):
        probe = dwac.Compiler(tok)
        g = probe.json_schema(schema)
        sizes.append(probe.cache_info()["bytes"])
    # A grammar is charged its tables, not the vocabulary every grammar of the tokenizer shares,
    # which its artifact holds a copy of (GPT-2's: some 570 kB).
    g.save(tmp_path / "null.dwa")
    assert 0 < sizes[2] and (tmp_path / "null.dwa").stat().st_size > sizes[2] + 500_000, sizes
    c = dwac.Compiler(tok, cache_bytes=sum(sizes) - 1)  # room for any two, not for the three
    a = c.json_schema({"type": "integer"})
    c.json_schema({"type": "boolean"})
    assert c.json_schema({"type": "integer"})._g is a._g  # a is now the most recent
    c.json_schema({"type": "null"})  # over budget: the boolean one goes
    info = c.cache_info()
    assert (info["entries"], info["evictions"]) == (2, 1) and info["bytes"] <= info["cache_bytes"]
    assert c.json_schema({"type": "integer"})._g is a._g
    assert c.cache_info()["misses"] == 3


def test_the_compiler_compiles_once_for_threads_asking_together():
    tok = dwac.Tokenizer.default()
    c = dwac.Compiler(tok)
    schema = json.loads((ROOT / "schemas/large/tools-10.json").read_text())
    out = [None] * 4
    barrier = threading.Barrier(4)

    def work(i):
        barrier.wait()
        out[i] = c.json_schema(schema)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(g._g is out[0]._g for g in out)
    info = c.cache_info()
    assert (info["misses"], info["hits"], info["entries"]) == (1, 3, 1)
