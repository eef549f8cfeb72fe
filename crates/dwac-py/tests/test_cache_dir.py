"""The artifact directory: a request's artifact is found under its key (``dwac.cache_key``,
``dwac compile --cache-dir``), a hit maps it instead of compiling, a compile is written there
for the next process, and a bad file there is compiled again and replaced."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import dwac

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}


@pytest.fixture(scope="module")
def tok():
    return dwac.Tokenizer.default()


def first_mask(g):
    bm = dwac.allocate_token_bitmask(1, g.vocab_size)
    dwac.Matcher(g).fill_next_token_bitmask(bm)
    return bm


def test_a_compile_is_written_under_its_key_and_found_by_the_next_compiler(tok, tmp_path):
    c = dwac.Compiler(tok, cache_dir=tmp_path)
    g = c.json_schema(SCHEMA)
    key = dwac.cache_key("json_schema", SCHEMA, tok)
    assert (tmp_path / f"{key}.dwa").is_file()
    info = c.cache_info()
    assert (info["disk_hits"], info["disk_writes"], info["cache_dir"]) == (0, 1, str(tmp_path)), info
    # A fresh compiler (another process, the next start) maps it: no compile.
    c2 = dwac.Compiler(tok, cache_dir=tmp_path)
    g2 = c2.json_schema(json.dumps(SCHEMA, indent=4))  # re-indented: the same key
    assert c2.cache_info()["disk_hits"] == 1 and c2.cache_info()["disk_writes"] == 0
    assert np.array_equal(first_mask(g), first_mask(g2))
    m = g2.matcher()
    for t in tok.encode('{"city": "Oslo", "days": 3}'):
        assert m.accept_token(t)
    # Other options are another key: compiled and written.
    c2.json_schema(SCHEMA, whitespace="compact")
    assert dwac.cache_key("json_schema", SCHEMA, tok, compact=True) != key
    assert c2.cache_info()["disk_writes"] == 1


def test_the_cli_precompiles_what_a_server_finds(tok, tmp_path):
    dwac_bin = ROOT / "target/release/dwac"
    if not dwac_bin.exists():
        pytest.skip("target/release/dwac is not built")
    src = tmp_path / "weather.json"
    src.write_text(json.dumps(SCHEMA))
    out = subprocess.run(
        [str(dwac_bin), "compile", str(src), "--cache-dir", str(tmp_path / "cache"), "--json"],
        check=True, capture_output=True, text=True,
    )
    key = json.loads(out.stdout.splitlines()[0])["cache_key"]
    assert key == dwac.cache_key("json_schema", SCHEMA, tok)
    c = dwac.Compiler(tok, cache_dir=tmp_path / "cache")
    c.json_schema(SCHEMA)
    assert c.cache_info()["disk_hits"] == 1
    # Tool lists: the CLI's --tools and the Compiler's tools() agree on the key too.
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    subprocess.run(
        [str(dwac_bin), "compile", str(tmp_path / "tools.json"), "--tools", "hermes", "--cache-dir", str(tmp_path / "cache")],
        check=True, capture_output=True,
    )
    c.tools(tools, "hermes")
    assert c.cache_info()["disk_hits"] == 2


def test_a_bad_file_under_a_key_is_compiled_again_and_replaced(tok, tmp_path):
    key = dwac.cache_key("json_schema", SCHEMA, tok)
    path = tmp_path / f"{key}.dwa"
    for bad in [b"", b"not an artifact", b"DWAC" + os.urandom(4000)]:
        path.write_bytes(bad)
        c = dwac.Compiler(tok, cache_dir=tmp_path)
        g = c.json_schema(SCHEMA)
        info = c.cache_info()
        assert (info["disk_bad_files"], info["disk_writes"]) == (1, 1), info
        assert dwac.Grammar.open(path, tok).num_tokens == g.num_tokens, "replaced by a good artifact"
    # Another tokenizer's artifact under the key (a file copied from elsewhere) is not used.
    other = dwac.Tokenizer.from_file(ROOT.parent / "shared/data/tokenizers/phi-3.5-mini/tokenizer.json")
    dwac.Grammar.from_json_schema(SCHEMA, other).save(path)
    c = dwac.Compiler(tok, cache_dir=tmp_path)
    assert np.array_equal(first_mask(c.json_schema(SCHEMA)), first_mask(dwac.Grammar.from_json_schema(SCHEMA, tok)))
    assert c.cache_info()["disk_bad_files"] == 1


def test_an_unwritable_directory_costs_only_the_write(tok, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a directory")
    c = dwac.Compiler(tok, cache_dir=blocker / "cache")
    assert c.json_schema(SCHEMA).num_tokens == tok.num_tokens
    assert c.cache_info()["disk_write_errors"] == 1
