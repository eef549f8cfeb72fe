"""The Python package against the Rust runtime on real inputs: compile/open/save round trips,
masks on real schemas and instances, fork/rollback/validate, batch and threaded fills, bad
inputs, bitmask helpers and the logits processors."""

import json
import pathlib
import threading

import numpy as np
import pytest

import dwac

ROOT = pathlib.Path(__file__).resolve().parents[3]
SHARED = ROOT.parent / "shared" / "data"


def bits(row, n):
    """Allowed token ids of one bitmask row."""
    b = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    return [int(i) for i in np.flatnonzero(b[:n])]


@pytest.fixture(scope="module")
def tok():
    return dwac.Tokenizer.default()


@pytest.fixture(scope="module")
def tools(tok):
    """A real function-calling schema (ten Glaive tools) and valid calls of it."""
    schema = json.loads((ROOT / "schemas/large/tools-10.json").read_text())
    lines = (ROOT / "schemas/large/tools-10.instances.jsonl").read_text().splitlines()
    docs = [json.loads(l) for l in lines if l.strip()]
    docs = [d if isinstance(d, str) else json.dumps(d.get("instance", d)) for d in docs][:12]
    return dwac.Grammar.from_json_schema(schema, tok), docs


def test_masks_equal_the_runtime_and_accept_real_instances(tok, tools):
    grammar, docs = tools
    n = tok.vocab_size
    bitmask = dwac.allocate_token_bitmask(1, n + 64)  # padded logits
    steps = 0
    for doc in docs:
        m = dwac.Matcher(grammar)
        for t in tok.encode(doc):
            m.fill_next_token_bitmask(bitmask)
            allowed = bits(bitmask[0], n + 64)
            assert allowed == m.allowed_tokens(), "the numpy mask differs from the runtime's"
            assert t in allowed
            assert m.accept_token(t)
            steps += 1
        assert m.is_accepting()
        eos = tok.eos_token_ids[0]
        assert m.accept_token(eos) and m.is_terminated() and not m.is_accepting()
        m.fill_next_token_bitmask(bitmask)
        assert not bitmask.any(), "a terminated matcher allows nothing"
    assert steps > 200


def test_round_trips_and_tokenizer_check(tok, tmp_path):
    g = dwac.Grammar.from_json_schema('{"type": "array", "items": {"type": "integer"}}', tok, whitespace="compact")
    path = tmp_path / "ints.dwa"
    g.save(path)
    h = dwac.Grammar.open(path, tok)
    assert h.metadata["tokenizer"]["name"] == "gpt2"
    assert h.metadata["options"]["schema.whitespace"] == "Compact"
    # A grammar compiled in process has no artifact until saved: its metadata is the one saved.
    assert g._g.metadata == h._g.metadata
    g.save(tmp_path / "again.dwa")
    h.save(tmp_path / "reopened.dwa")
    assert path.read_bytes() == (tmp_path / "again.dwa").read_bytes() == (tmp_path / "reopened.dwa").read_bytes()
    a, b = dwac.Matcher(g), dwac.Matcher(h)
    ids = tok.encode("[1,22,333]")
    for t in ids:
        assert a.allowed_tokens() == b.allowed_tokens()
        assert a.accept_token(t) and b.accept_token(t)
    assert not a.accept_token(tok.encode(" ")[0]), "compact whitespace allows a space"
    qwen = SHARED / "tokenizers/qwen3/tokenizer.json"
    if qwen.exists():
        other = dwac.Tokenizer.from_file(qwen)
        with pytest.raises(dwac.DwacError, match="qwen3"):
            dwac.Grammar.open(path, other)
    for make, src, text in [
        (dwac.Grammar.from_lark, 'start: "a" B\nB: /[0-9]+/\n', "a42"),
        (dwac.Grammar.from_gbnf, 'root ::= "a" [0-9]+\n', "a42"),
        (dwac.Grammar.from_regex, "a[0-9]+", "a42"),
    ]:
        m = dwac.Matcher(make(src, tok))
        assert m.accept_tokens(tok.encode(text)) == len(tok.encode(text)) and m.is_accepting()


def test_zstd_form_without_the_vocabulary_opens_with_its_tokenizer(tok, tmp_path):
    g = dwac.Grammar.from_json_schema('{"type": "object", "properties": {"n": {"type": "integer"}}}', tok)
    full, bare = tmp_path / "n.dwa.zst", tmp_path / "n-bare.dwa.zst"
    g.save(full, zstd=True)
    g.save(bare, zstd=True, without_vocabulary=True)
    assert bare.stat().st_size * 3 < full.stat().st_size
    with pytest.raises(dwac.DwacError, match="leaves the vocabulary out"):
        dwac.Grammar.open(bare)
    h = dwac.Grammar.open(bare, tok)
    a, b = dwac.Matcher(g), dwac.Matcher(h)
    for t in tok.encode('{"n": 12}'):
        assert a.allowed_tokens() == b.allowed_tokens()
        assert a.accept_token(t) and b.accept_token(t)
    with pytest.raises(ValueError, match="zstd=True"):
        g.save(tmp_path / "x.dwa", without_vocabulary=True)
    qwen = SHARED / "tokenizers/qwen3/tokenizer.json"
    if qwen.exists():
        with pytest.raises(dwac.DwacError, match="qwen3"):
            dwac.Grammar.open(bare, dwac.Tokenizer.from_file(qwen))


def test_fork_rollback_validate_reset(tok, tools):
    grammar, docs = tools
    ids = tok.encode(docs[0])
    m = dwac.Matcher(grammar)
    half = len(ids) // 2
    assert m.accept_tokens(ids[:half]) == half
    before = m.allowed_tokens()
    f = m.fork()
    assert f.accept_tokens(ids[half:]) == len(ids) - half and f.is_accepting()
    assert m.allowed_tokens() == before, "the fork changed the original"
    assert m.validate_tokens(ids[half:]) == len(ids) - half
    assert m.validate_tokens(ids[half:] + [ids[0]] * 3) == len(ids) - half
    assert m.allowed_tokens() == before, "validate_tokens changed the matcher"
    f.rollback(len(ids) - half)
    assert f.allowed_tokens() == before
    with pytest.raises(dwac.DwacError, match="roll back"):
        f.rollback(10_000)
    m.reset()
    assert m.allowed_tokens() == dwac.Matcher(grammar).allowed_tokens()
    with pytest.raises(dwac.DwacError, match="rejected"):
        dwac.Matcher(grammar).commit(tok.encode("]")[0])


def test_forced_tokens_and_bytes(tok):
    m = dwac.Matcher(dwac.Grammar.from_regex("get_weather\\((city|zip)=[0-9]+\\)", tok))
    forced = bytes(m.forced_bytes(64))
    assert forced == b"get_weather(", forced
    # (`g`, `ge`, `get`… are all allowed: no single token is forced.)
    assert m.forced_tokens(64) == []
    m.accept_bytes(forced)
    assert [tok.token_bytes(t) for t in m.forced_tokens(64)] == [], "after the forced bytes there is a choice"
    allowed = {tok.token_bytes(t) for t in m.allowed_tokens()}
    assert {b"c", b"z", b"city", b"zip"} & allowed and all(b"city=".startswith(a) or b"zip=".startswith(a) for a in allowed)
    # Where exactly one token is allowed it is forced: the end token after a complete value.
    g = dwac.Grammar.from_json_schema({"type": "array", "maxItems": 0}, tok, whitespace="compact")
    m = dwac.Matcher(g)
    m.accept_bytes(b"[]")
    assert m.forced_tokens(8) == tok.eos_token_ids[:1]
    # A JSON key may be spelled with escapes: after `{"` nothing is forced.
    g = dwac.Grammar.from_json_schema({"type": "object", "properties": {"name": {"const": "x"}}, "required": ["name"], "additionalProperties": False}, tok, whitespace="compact")
    assert bytes(dwac.Matcher(g).forced_bytes(64)) == b'{"'


def test_batch_fill_equals_one_by_one_and_threads(tok, tools):
    grammar, docs = tools
    matchers = []
    for doc in docs[:6]:
        m = dwac.Matcher(grammar)
        for t in tok.encode(doc)[:7]:
            m.accept_token(t)
            matchers.append(m.fork())
    n = tok.vocab_size
    one = dwac.allocate_token_bitmask(len(matchers), n)
    for i, m in enumerate(matchers):
        m.fill_next_token_bitmask(one, i)
    batch = dwac.allocate_token_bitmask(len(matchers), n)
    dwac.fill_next_token_bitmask_batch(matchers, batch)
    assert np.array_equal(one, batch)
    # Rows in another order.
    rev = dwac.allocate_token_bitmask(len(matchers), n)
    dwac.fill_next_token_bitmask_batch(matchers, rev, list(reversed(range(len(matchers)))))
    assert np.array_equal(rev[::-1], one)
    with pytest.raises(ValueError, match="repeated"):
        dwac.fill_next_token_bitmask_batch(matchers[:2], batch, [0, 0])
    # Python threads filling different matchers at once (the GIL is released while filling).
    out = dwac.allocate_token_bitmask(len(matchers), n)
    errors = []

    def work(k):
        try:
            for i in range(k, len(matchers), 4):
                matchers[i].fill_next_token_bitmask(out, i)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and np.array_equal(out, one)


def test_bad_arrays_raise_value_error(tok, tools):
    grammar, _ = tools
    m = dwac.Matcher(grammar)
    words = (tok.vocab_size + 31) // 32
    cases = [
        np.zeros((1, words), dtype=np.float64),
        np.zeros(words, dtype=np.int32),
        np.zeros((1, words - 1), dtype=np.int32),
        np.zeros((2, 2 * words), dtype=np.int32)[:, ::2],
        [0] * words,
    ]
    for bad in cases:
        with pytest.raises(ValueError):
            m.fill_next_token_bitmask(bad)
    ro = np.zeros((1, words), dtype=np.int32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="writable"):
        m.fill_next_token_bitmask(ro)
    with pytest.raises(ValueError, match="out of range"):
        m.fill_next_token_bitmask(np.zeros((1, words), dtype=np.int32), index=1)


def test_bad_schemas_and_grammars_raise_with_location(tok):
    with pytest.raises(dwac.DwacError, match=r"/properties/a"):
        dwac.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<=x)y"}}}, tok)
    with pytest.raises(dwac.DwacError, match=r"uniqueItems.*/properties/b"):
        dwac.Grammar.from_json_schema({"type": "object", "properties": {"b": {"type": "array", "uniqueItems": True}}}, tok)
    g = dwac.Grammar.from_json_schema({"type": "object", "properties": {"b": {"type": "array", "uniqueItems": True}}}, tok, lenient=True)
    assert any("uniqueItems" in w for w in g.warnings), g.warnings
    with pytest.raises(dwac.DwacError, match=r'type.*/properties/a.*unknown type name "strin"'):
        dwac.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "strin"}}}, tok)
    g = dwac.Grammar.from_json_schema({"type": "object", "propertie": {"a": {"type": "string"}}}, tok)
    assert [w for w in g.warnings if "unknown keyword `propertie` at #" in w and "`properties`?" in w], g.warnings
    with pytest.raises(dwac.DwacError, match=r"grammar:2:"):
        dwac.Grammar.from_lark('start: "a"\nb: (\n', tok)
    with pytest.raises(dwac.DwacError):
        dwac.Grammar.from_json_schema("{not json", tok)
    with pytest.raises(dwac.DwacError):
        dwac.Grammar.from_json_schema({}, tok, draft="draft99")
    with pytest.raises(dwac.DwacError):
        dwac.Grammar.open("/nonexistent/x.dwa")


def test_check_gives_the_compiles_message_without_compiling(tok):
    """dwac.check (a server's frontend check): the front end alone, no tokenizer; where it finds a
    fault, the message is the compile's own."""
    bad = [
        ("json_schema", {"type": "object", "properties": {"b": {"type": "array", "uniqueItems": True}}}, {}),
        ("json_schema", {"type": "object", "properties": {"a": {"type": "strin"}}}, {}),
        ("json_schema", "{not json", {}),
        ("lark", 'start: "a"\nb: (\n', {}),
        ("gbnf", "root ::= missing", {}),
        ("structural_tag", {"type": "structural_tag", "format": {"type": "nope"}}, {}),
        ("regex", "(unclosed", {}),
    ]
    for kind, source, options in bad:
        with pytest.raises(dwac.DwacError) as checked:
            dwac.check(kind, source, **options)
        compile = {"json_schema": dwac.Grammar.from_json_schema, "lark": dwac.Grammar.from_lark, "gbnf": dwac.Grammar.from_gbnf,
                   "structural_tag": dwac.Grammar.from_structural_tag, "regex": dwac.Grammar.from_regex}[kind]
        with pytest.raises(dwac.DwacError) as compiled:
            compile(source, tok, **options)
        assert str(checked.value) == str(compiled.value), (kind, source)
    assert dwac.check("json_schema", {"type": "object", "properties": {"a": {"type": "integer"}}}) == []
    assert dwac.check("gbnf", 'root ::= "a" | "b"') == []
    warnings = dwac.check("json_schema", {"type": "array", "uniqueItems": True}, lenient=True)
    assert any("uniqueItems" in w for w in warnings), warnings
    with pytest.raises(dwac.DwacError, match="unknown grammar kind"):
        dwac.check("yaml", "a: b")


def test_apply_token_bitmask_inplace(tok):
    n = 100
    bitmask = np.zeros((2, 4), dtype=np.int32)
    bitmask.view(np.uint32)[0, 0] = 0b1011
    bitmask.view(np.uint32)[1, 3] = np.uint32(1 << 31)
    logits = np.zeros((2, n + 5), dtype=np.float32)
    dwac.apply_token_bitmask_inplace(logits, bitmask)
    assert list(np.flatnonzero(np.isfinite(logits[0]))) == [0, 1, 3]
    assert not np.isfinite(logits[1]).any(), "token 127 is past the logits; nothing else is allowed"
    one = np.zeros(n, dtype=np.float32)
    dwac.apply_token_bitmask_inplace(one, bitmask[:1])
    assert list(np.flatnonzero(np.isfinite(one))) == [0, 1, 3]


def test_native_float32_masking_equals_the_numpy_path():
    rng = np.random.default_rng(3)
    n = 1000
    bitmask = rng.integers(-(2**31), 2**31, size=(3, 30), dtype=np.int64).astype(np.int32)
    bitmask[1] = -1  # all allowed up to the bitmask's width (960 < n: the rest is disallowed)
    for indices in (None, [2, 0]):
        rows = 3 if indices is None else 2
        f32 = rng.standard_normal((3, n)).astype(np.float32)
        f64 = f32.astype(np.float64)
        assert dwac._dwac.apply_bitmask_f32(f32, bitmask[:rows] if indices else bitmask, indices)
        dwac.apply_token_bitmask_inplace(f64, bitmask[:rows] if indices else bitmask, indices)  # numpy path
        assert np.array_equal(np.isfinite(f32), np.isfinite(f64))
        masked = [0, 1, 2] if indices is None else indices  # rows left out stay untouched
        assert np.isfinite(f32[masked]).sum() > 0 and not np.isfinite(f32[masked, 960:]).any()
        if indices is not None:
            assert np.isfinite(f32[1]).all()
    # A strided view is not C-contiguous: the native path declines and the numpy path masks it.
    base = np.zeros((2, n), dtype=np.float32)
    view = base[:, ::2]
    assert not dwac._dwac.apply_bitmask_f32(view, bitmask[:2])
    dwac.apply_token_bitmask_inplace(view, bitmask[:2])
    assert np.isfinite(view).sum() > 0 and not np.isfinite(view).all()


def test_llama_cpp_processor_constrains_a_fake_model(tok):
    from dwac.integrations.llama_cpp import DwacLogitsProcessor

    g = dwac.Grammar.from_json_schema({"type": "array", "items": {"type": "boolean"}, "maxItems": 3}, tok, whitespace="compact")
    proc = DwacLogitsProcessor(g)
    prompt = tok.encode("Give me booleans: ")
    ids = list(prompt)
    rng = np.random.default_rng(7)
    for _ in range(60):
        scores = rng.standard_normal(tok.vocab_size).astype(np.float32)
        out = proc(np.array(ids, dtype=np.intc), scores)
        t = int(np.argmax(out))
        assert np.isfinite(out[t])
        ids.append(t)
        if t in tok.eos_token_ids:
            break
    text = b"".join(tok.token_bytes(t) for t in ids[len(prompt):] if t not in tok.eos_token_ids)
    value = json.loads(text)
    assert isinstance(value, list) and len(value) <= 3 and all(isinstance(v, bool) for v in value)
    assert ids[-1] in tok.eos_token_ids and proc.matcher.is_accepting()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_transformers_processor_constrains_every_row(tok, backend):
    """The processor on numpy arrays (always: it is duck-typed) and on torch tensors (when torch
    is installed), with logits wider than the vocabulary."""
    from dwac.integrations.transformers import DwacLogitsProcessor

    if backend == "torch":
        torch = pytest.importorskip("torch")
        tensor = lambda rows: torch.tensor(rows, dtype=torch.long)
        randn = lambda *shape: torch.randn(*shape, generator=torch.Generator().manual_seed(3))
        argmax = lambda s: s.argmax(-1).tolist()
        finite = lambda s: torch.isfinite(s).numpy()
        append = lambda ids, nxt: torch.cat([ids, torch.tensor(nxt)[:, None]], 1)
    else:
        rng = np.random.default_rng(3)
        tensor = lambda rows: np.array(rows, dtype=np.int64)
        randn = lambda *shape: rng.standard_normal(shape)
        argmax = lambda s: s.argmax(-1).tolist()
        finite = np.isfinite
        append = lambda ids, nxt: np.concatenate([ids, np.array(nxt)[:, None]], 1)

    g = dwac.Grammar.from_regex("(yes|no)", tok)
    proc = DwacLogitsProcessor(g)
    prompts = [tok.encode("Answer: "), tok.encode("Reply: ")[:2] + [0]]
    ids = tensor(prompts)
    eos = tok.eos_token_ids
    width = tok.vocab_size + 30
    for _ in range(6):
        scores = proc(ids, randn(2, width))
        ok = finite(scores)
        assert not ok[:, tok.vocab_size :].any(), "logits past the vocabulary stay disallowed"
        nxt = argmax(scores)
        assert all(ok[r, t] for r, t in enumerate(nxt))
        ids = append(ids, nxt)
    for row, prompt in zip(ids.tolist(), prompts):
        out = row[len(prompt) :]
        assert eos[0] in out, f"row never ended: {out}"
        text = b"".join(tok.token_bytes(t) for t in out[: out.index(eos[0])])
        assert text in (b"yes", b"no") and all(t == eos[0] for t in out[out.index(eos[0]) :])


def test_vocab_size_override_pads_masks_and_keeps_the_fingerprint(tok, tmp_path):
    n = tok.num_tokens
    assert tok.vocab_size == n
    wide = dwac.Tokenizer.default(vocab_size=n + 100)
    assert (wide.vocab_size, wide.num_tokens) == (n + 100, n)
    assert wide.fingerprint == tok.fingerprint
    assert tok.with_vocab_size(n + 100).vocab_size == n + 100
    assert "num_tokens" in repr(wide)
    for bad in (n - 1, 0):
        with pytest.raises(dwac.DwacError, match="smaller than the tokenizer"):
            dwac.Tokenizer.default(vocab_size=bad)

    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    g = dwac.Grammar.from_json_schema(schema, wide)
    plain = dwac.Grammar.from_json_schema(schema, tok)
    assert (g.vocab_size, g.num_tokens, plain.vocab_size) == (n + 100, n, n)
    m, p = dwac.Matcher(g), dwac.Matcher(plain)

    narrow = dwac.allocate_token_bitmask(1, n)  # wide enough for the tokenizer, not the model
    assert narrow.shape[1] * 32 < n + 100
    with pytest.raises(ValueError, match="vocab_size 50357"):
        m.fill_next_token_bitmask(narrow)
    with pytest.raises(ValueError, match="vocab_size"):
        dwac.fill_next_token_bitmask_batch([m], narrow)

    bitmask = dwac.allocate_token_bitmask(1, g.vocab_size)
    reference = dwac.allocate_token_bitmask(1, n)
    for t in tok.encode('{"ok": true}'):
        m.fill_next_token_bitmask(bitmask)
        p.fill_next_token_bitmask(reference)
        assert bits(bitmask[0], n + 100) == bits(reference[0], n), "padding changed the mask"
        assert not m.accept_token(n + 5), "a padding id is refused"
        assert m.accept_token(t) and p.accept_token(t)
    assert m.is_accepting()
    forked = m.fork()
    forked.fill_next_token_bitmask(bitmask)
    with pytest.raises(ValueError, match="vocab_size"):
        forked.fill_next_token_bitmask(narrow)

    path = tmp_path / "g.dwa"
    plain.save(path)
    assert dwac.Grammar.open(path, wide).vocab_size == n + 100, "the same artifact serves the padded model"
    assert dwac.Grammar.open(path).vocab_size == n


def test_tokenizer_from_hf_objects_has_the_files_fingerprint():
    tokenizers = pytest.importorskip("tokenizers")
    path = SHARED / "tokenizers/qwen3/tokenizer.json"
    if not path.exists():
        pytest.skip("no qwen3 tokenizer beside the repo")
    from_file = dwac.Tokenizer.from_file(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    from_hf = dwac.tokenizer_from_hf(hf, eos_token_ids=from_file.eos_token_ids)
    assert from_hf.vocab_size == from_file.vocab_size
    assert from_hf.fingerprint == from_file.fingerprint
    padded = dwac.tokenizer_from_hf(hf, eos_token_ids=from_file.eos_token_ids, vocab_size=151_936)
    assert (padded.vocab_size, padded.num_tokens) == (151_936, from_file.vocab_size)
    assert padded.fingerprint == from_file.fingerprint
    assert dwac.Tokenizer.from_file(path, vocab_size=151_936).vocab_size == 151_936
    with pytest.raises(dwac.DwacError):
        dwac.tokenizer_from_hf(object())


def test_tokenizer_from_gguf_matches_the_tokenizer_json_and_compiles():
    gguf = SHARED / "tokenizers/llama.cpp-vocab/ggml-vocab-phi-3.gguf"
    hf = SHARED / "tokenizers/phi-3.5-mini/tokenizer.json"
    if not gguf.exists() or not hf.exists():
        pytest.skip("no llama.cpp vocabularies beside the repo")
    g = dwac.Tokenizer.from_gguf(gguf)
    assert g.name == "ggml-vocab-phi-3"
    # The same vocabulary as the model's tokenizer.json (the GGUF's 53 padding ids left out).
    assert g.fingerprint == dwac.Tokenizer.from_file(hf).fingerprint
    assert dwac.Tokenizer.from_file(gguf).fingerprint == g.fingerprint
    grammar = dwac.Grammar.from_regex("[0-9]{2,3}", g)
    m = dwac.Matcher(grammar)
    assert m.accept_tokens(g.encode("42")) == len(g.encode("42"))
    assert m.is_accepting()
    with pytest.raises(dwac.DwacError, match="not a GGUF file"):
        dwac.Tokenizer.from_gguf(hf)


def test_time_trace_bench_hook_replays_and_stops_at_a_refused_token(tok):
    # The hook exists in builds with the crate feature `bench` (CI's and the bench venvs').
    g = dwac.Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}}, tok, whitespace="compact")
    ids = tok.encode("[1,22,333]")
    m = dwac.Matcher(g)
    fill, commit = dwac._dwac._time_trace(m, ids)
    assert len(fill) == len(commit) == len(ids) and all(x > 0 for x in fill)
    assert m.is_accepting(), "the matcher advanced through the whole trace"
    bad = tok.encode("[1,x")
    fill, _ = dwac._dwac._time_trace(dwac.Matcher(g), bad)
    assert len(fill) == len(bad) and len(bad) > 1  # the refused token is the last one timed


ZERO_COUNTERS = {
    "undecided": 0,
    "fallbacks": 0,
    "reads": 0,
    "masks": 0,
    "undecided_total": 0,
    "fallbacks_total": 0,
    "masks_with_undecided": 0,
}

# A cut of the bc grammar (../shared/data/grammars/ligurio-lark-grammars: `scale` and `left`,
# the terminals as there). Compiled with the diagnostic work budget of 10 per lexer state, the
# start state's lexer state is over it (its tokens stay UNDECIDED) and the one after `scale =`
# is not. (With the normal budget the compiler decides every pair of this grammar.)
BC_CUT = """start: scale | left
left: SIGN_NUMBER "-" SIGN_NUMBER
scale: "scale = " NUMBER
DIGIT: "0".."9"
NOZERO: "1".."9"
NUMBER: NOZERO?DIGIT+
SIGN_NUMBER: "-"?NUMBER
"""


def test_counters_stay_zero_on_a_plain_json_schema(tok, tools):
    grammar, docs = tools
    assert grammar.undecided_tokens == 0 == grammar.metadata["mask"]["undecided_tokens"]
    n = tok.vocab_size
    bitmask = dwac.allocate_token_bitmask(1, n)
    m = dwac.Matcher(grammar)
    assert m.counters() == ZERO_COUNTERS
    ids = tok.encode(docs[0])
    reads = 0
    for t in ids:
        m.fill_next_token_bitmask(bitmask)
        reads += m.counters()["reads"]  # (the last fill's)
        assert m.accept_token(t)
    assert reads > 0, "the fills read the Parser DWA"
    c = m.counters()
    assert c["masks"] == len(ids) > 10
    assert c["undecided"] == c["fallbacks"] == 0
    assert c["undecided_total"] == c["fallbacks_total"] == c["masks_with_undecided"] == 0
    # The batch fill counts each row to its matcher.
    ms = [m.fork(), dwac.Matcher(grammar), dwac.Matcher(grammar)]
    assert ms[0].counters() == ZERO_COUNTERS, "a fork's counters start from zero"
    dwac.fill_next_token_bitmask_batch(ms, dwac.allocate_token_bitmask(3, n))
    dwac.fill_next_token_bitmask_batch(ms[1:], dwac.allocate_token_bitmask(2, n))
    assert [x.counters()["masks"] for x in ms] == [1, 2, 2]
    assert all(x.counters()["undecided_total"] == x.counters()["fallbacks_total"] == 0 for x in ms)


def test_counters_count_the_undecided_tokens_a_grammar_leaves(tok):
    g = dwac.Grammar._compile("lark", BC_CUT, tok, _mask_work_per_lexer_state=10)
    assert g.undecided_tokens > 0
    assert g.undecided_tokens == g.metadata["mask"]["undecided_tokens"]
    assert dwac.Grammar.from_lark(BC_CUT, tok).undecided_tokens == 0
    n = tok.vocab_size
    bitmask = dwac.allocate_token_bitmask(1, n)
    m = dwac.Matcher(g)
    m.fill_next_token_bitmask(bitmask)
    c = m.counters()
    assert c["undecided"] > 0 and c["fallbacks"] == 0
    assert c["masks"] == 1 and c["masks_with_undecided"] == 1 and c["undecided_total"] == c["undecided"]
    assert bits(bitmask[0], n) == m.allowed_tokens(), "the mask is exact all the same"
    one = c["undecided"]
    ids = tok.encode("scale =")
    assert m.accept_tokens(ids) == len(ids)
    m.fill_next_token_bitmask(bitmask)
    c = m.counters()
    assert c["undecided"] == 0, "the last fill's count is its own, not the previous fill's"
    assert c["masks"] == 2 and c["masks_with_undecided"] == 1 and c["undecided_total"] == one
    assert bits(bitmask[0], n) == m.allowed_tokens()
    # The batch fill: each row's counters go to its own matcher.
    at_start, there = dwac.Matcher(g), m.fork()
    dwac.fill_next_token_bitmask_batch([at_start, there], dwac.allocate_token_bitmask(2, n), [1, 0])
    assert at_start.counters()["undecided"] == at_start.counters()["undecided_total"] == one
    assert at_start.counters()["masks"] == at_start.counters()["masks_with_undecided"] == 1
    assert there.counters()["undecided_total"] == 0 and there.counters()["masks"] == 1
    # `reset` keeps the counts of the matcher's life.
    m.reset()
    assert m.counters()["masks"] == 2 and m.counters()["undecided_total"] == one


def test_a_starved_compile_leaves_undecided_tokens_and_exact_masks(tok):
    # (The diagnostic budget: every lexer state over it leaves all its tokens UNDECIDED.)
    schema = '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}'
    normal = dwac.Grammar.from_json_schema(schema, tok)
    starved = dwac.Grammar._compile("json_schema", schema, tok, _mask_work_per_lexer_state=1)
    assert starved.metadata["options"]["mask.work_per_lexer_state"] == 1
    assert starved.metadata["mask"]["lexer_states_over_budget"] > 0
    assert normal.undecided_tokens == 0 and starved.undecided_tokens > 0
    n = tok.vocab_size
    a, b = dwac.Matcher(normal), dwac.Matcher(starved)
    ma, mb = dwac.allocate_token_bitmask(1, n), dwac.allocate_token_bitmask(1, n)
    ids = tok.encode('{"a": 12, "b": "xy"}')
    for t in ids:
        a.fill_next_token_bitmask(ma)
        b.fill_next_token_bitmask(mb)
        assert np.array_equal(ma, mb), "UNDECIDED tokens decided at run time give the same mask"
        assert a.accept_token(t) and b.accept_token(t)
    ca, cb = a.counters(), b.counters()
    assert ca["masks"] == cb["masks"] == len(ids)
    assert ca["undecided_total"] == ca["masks_with_undecided"] == 0
    assert cb["undecided_total"] > 0 and 0 < cb["masks_with_undecided"] <= len(ids)
    assert ca["fallbacks_total"] == cb["fallbacks_total"] == 0
    # The batch fill and `_time_trace` count the same as single fills from the same states.
    single, rows = dwac.Matcher(starved), [dwac.Matcher(starved), dwac.Matcher(starved)]
    single.fill_next_token_bitmask(mb)
    dwac.fill_next_token_bitmask_batch(rows, dwac.allocate_token_bitmask(2, n))
    for r in rows:
        assert r.counters() == single.counters()
    timed = dwac.Matcher(starved)
    dwac._dwac._time_trace(timed, ids)
    assert timed.counters()["masks"] == len(ids)
    assert timed.counters()["undecided_total"] == cb["undecided_total"]


def test_a_token_symbol_matches_that_token_and_no_text(tok):
    # GPT-2 has no special token but its end token, so the grammar names a text token by id:
    # it then matches that token only, and no longer spells text.
    n = tok.vocab_size
    word = tok.encode(" hello")
    assert len(word) == 1
    (hello,) = word
    for g in (
        dwac.Grammar.from_lark(f'start: "a" <[{hello}]> "b"', tok),
        dwac.Grammar.from_gbnf(f'root ::= "a" <[{hello}]> "b"', tok),
    ):
        m = dwac.Matcher(g)
        assert m.accept_tokens(tok.encode("a")) == 1
        assert m.allowed_tokens() == [hello], "the token, and no text spelling ` hello`"
        bitmask = dwac.allocate_token_bitmask(1, n)
        m.fill_next_token_bitmask(bitmask)
        assert bits(bitmask[0], n) == [hello]
        assert not m.accept_token(tok.encode(" h")[0]), "text does not spell the token"
        assert m.accept_token(hello)
        assert m.allowed_tokens() == tok.encode("b")
    with pytest.raises(dwac.DwacError, match="outside the vocabulary"):
        dwac.Grammar.from_lark(f"start: <[{n}]>", tok)


def test_a_structural_tag_of_tool_calls(tok):
    tag = {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<tool_call>"],
            "tags": [
                {
                    "type": "tag",
                    "begin": '<tool_call>{"name": "get_weather", "arguments": ',
                    "content": {
                        "type": "json_schema",
                        "json_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                    },
                    "end": "}</tool_call>",
                }
            ],
            "stop_after_first": True,
        },
    }
    g = dwac.Grammar.from_structural_tag(tag, tok)
    assert g.undecided_tokens == 0
    assert dwac.Grammar.from_structural_tag(json.dumps(tag), tok).undecided_tokens == 0

    def accepts(text):
        m = dwac.Matcher(g)
        ids = tok.encode(text)
        return m.accept_tokens(ids) == len(ids) and m.is_accepting()

    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    assert accepts("Sure. " + call)
    assert accepts("No call needed.")
    assert not accepts(call + " more")
    assert not accepts('<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>')
    with pytest.raises(dwac.DwacError, match="format type `dispatch` is not supported"):
        dwac.Grammar.from_structural_tag({"type": "dispatch", "rules": []}, tok)
    # strict: the arguments' schema refuses keys it does not name (XGrammar's language); the
    # default (JSON Schema's meaning) allows them; a Compiler caches the two apart.
    extra = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}</tool_call>'
    assert accepts(extra)
    g = dwac.Grammar.from_structural_tag(tag, tok, strict=True)
    assert accepts(call) and not accepts(extra)
    assert g.metadata["options"]["schema.strict"] is True
    compiler = dwac.Compiler(tok)
    cached = compiler.structural_tag(tag, strict=True)._g
    assert cached is compiler.structural_tag(tag, strict=True)._g
    assert cached is not compiler.structural_tag(tag)._g
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    g = compiler.json_schema(schema, strict=True)
    assert accepts('{"a": 1}') and not accepts('{"a": 1, "b": 2}')
    assert dwac.Grammar.from_json_schema(schema, tok, strict=True).metadata["options"]["schema.strict"] is True
    # ... and Lark's `%json` takes it too.
    lark = 'start: %json {"type": "object", "properties": {"a": {"type": "integer"}}}\n'
    g = dwac.Grammar.from_lark(lark, tok, strict=True)
    assert accepts('{"a": 1}') and not accepts('{"a": 1, "b": 2}')
    g = compiler.lark(lark)
    assert accepts('{"a": 1, "b": 2}')


def test_max_whitespace_bounds_the_json_whitespace(tok):
    g = dwac.Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}}, tok, max_whitespace=1)
    m = dwac.Matcher(g)
    assert m.accept_tokens(tok.encode("[1, 2")) == len(tok.encode("[1, 2"))
    m2 = dwac.Matcher(g)
    ids = tok.encode("[1,  2]")
    assert m2.accept_tokens(ids) < len(ids), "two spaces after a comma are one too many"
