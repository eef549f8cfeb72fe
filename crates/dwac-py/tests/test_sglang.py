"""``dwac.integrations.sglang`` inside SGLang's own grammar-backend code (no stand-ins): the
backend registered and created through SGLang's registry, every dispatch kind and its refusals,
the batched fill, speculative accept/rollback, cache-hit copies, reasoning, jump-forward.

Needs SGLang importable (``cargo dwac-bench servers`` builds such an environment); skipped
otherwise (CI runs the package's own tests without it)."""

import json

import numpy as np
import pytest

sglang = pytest.importorskip("sglang")
torch = pytest.importorskip("torch")

import dwac  # noqa: E402
from dwac.integrations import sglang as dsgl  # noqa: E402
from sglang.srt.constrained import base_grammar_backend as base  # noqa: E402

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}


def make_backend(model_dir, **args):
    from sglang.srt import runtime_context as rc
    from sglang.srt.server_args import ServerArgs
    from transformers import AutoTokenizer

    dsgl.register()
    sa = ServerArgs(model_path=str(model_dir), device="cpu", grammar_backend="dwac", **args)
    rc.publish(sa, role="scheduler")
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    b = base.create_grammar_backend(sa, tok, 151936, {tok.eos_token_id})
    return b, tok


@pytest.fixture(scope="module")
def backend(model_dir):
    return make_backend(model_dir)


def grammar_of(b, key):
    value, hit = b.get_cached_or_future_value(key, False)
    g = value if hit else value.result()
    if not hit:
        b.set_cache(key, g)
    return g


def allowed(mask_row, n=151936):
    bits = np.unpackbits(mask_row.numpy().view(np.uint8), bitorder="little")[:n]
    return set(np.flatnonzero(bits).tolist())


def walk(g, tok, text, eos):
    """Accept `text` token by token, each token checked against the mask first; then EOS."""
    m = g.allocate_vocab_mask(151936, 1, "cpu")
    for t in tok.encode(text, add_special_tokens=False):
        g.fill_vocab_mask(m, 0)
        assert t in allowed(m[0]), (text, t)
        g.accept_token(t)
    g.fill_vocab_mask(m, 0)
    assert eos in allowed(m[0]), text
    g.accept_token(eos)
    assert g.is_terminated()


def test_registered_through_the_entry_point_and_the_registry(backend, model_dir):
    b, _ = backend
    assert isinstance(b, dsgl.DwacGrammarBackend)
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES

    assert "dwac" in GRAMMAR_BACKEND_CHOICES
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="sglang.srt.plugins") if ep.name == "dwac"]
    if eps:  # (installed as a package: the plugin SGLang loads is this one)
        assert eps[0].value == "dwac.integrations.sglang:register"


def test_every_dispatch_kind(backend):
    b, tok = backend
    eos = tok.eos_token_id
    walk(grammar_of(b, ("json", json.dumps(SCHEMA))), tok, '{"city": "Oslo", "days": 3}', eos)
    walk(grammar_of(b, ("json", "$$ANY$$")), tok, '[1, {"a": null}]', eos)
    walk(grammar_of(b, ("regex", r"(yes|no) [0-9]{2}")), tok, "yes 42", eos)
    walk(grammar_of(b, ("ebnf", 'root ::= "a" [0-9]+ "z"')), tok, "a123z", eos)
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<c>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</c>"}}
    walk(grammar_of(b, ("structural_tag", json.dumps(tag))), tok, '<c>{"city": "Rome"}</c>', eos)
    legacy = {"structures": [{"begin": "<f>", "schema": SCHEMA, "end": "</f>"}], "triggers": ["<f>"]}
    walk(grammar_of(b, ("structural_tag", json.dumps(legacy))), tok, 'hi <f>{"city": "Oslo"}</f>', eos)
    # SGLang's older form with `at_least_one`: a turn without a tag cannot end.
    g = grammar_of(b, ("structural_tag", json.dumps(dict(legacy, at_least_one=True))))
    m = g.allocate_vocab_mask(151936, 1, "cpu")
    for t in tok.encode("hi", add_special_tokens=False):
        g.accept_token(t)
    g.fill_vocab_mask(m, 0)
    assert eos not in allowed(m[0])


def test_the_masks_are_dwacs_own(backend):
    b, tok = backend
    g = grammar_of(b, ("json", json.dumps(SCHEMA)))
    mine = dwac.Grammar.from_json_schema(SCHEMA, dwac.tokenizer_from_hf(tok, vocab_size=151936))
    m = dwac.Matcher(mine)
    row = g.allocate_vocab_mask(151936, 1, "cpu")
    ref = dwac.allocate_token_bitmask(1, 151936)
    for t in tok.encode('{"city": "Paris"', add_special_tokens=False):
        g.fill_vocab_mask(row, 0)
        m.fill_next_token_bitmask(ref)
        assert np.array_equal(row.numpy(), ref)
        g.accept_token(t)
        assert m.accept_token(t)


def test_refusals_are_invalid_grammar_objects_per_request(backend):
    b, _ = backend
    cases = [
        ("json", "{not json"),
        ("json", json.dumps({"type": "object", "properties": {"a": {"type": "string", "format": "hostname", "contentMediaType": "x", "$dynamicRef": "#a"}}})),
        ("regex", "(unclosed"),
        ("ebnf", "root ::= undefined_rule"),
        ("structural_tag", json.dumps({"type": "structural_tag", "format": {"type": "no-such-format"}})),
    ]
    for key in cases:
        g = grammar_of(b, key)
        assert isinstance(g, base.InvalidGrammarObject), key
        assert g.error_message, key
    assert "$dynamicRef" in grammar_of(b, cases[1]).error_message
    # The backend still serves the next request.
    assert isinstance(grammar_of(b, ("regex", "ok")), dsgl.DwacGrammar)


def test_batched_fill_equals_one_by_one_and_leaves_other_rows(backend):
    b, tok = backend
    gs = [grammar_of(b, ("json", json.dumps(SCHEMA))).copy() for _ in range(3)]
    gs.append(grammar_of(b, ("regex", "[a-z]+")).copy())
    for g, text in zip(gs, ['{"ci', '{"city": "O', "", "ab"]):
        for t in tok.encode(text, add_special_tokens=False):
            g.accept_token(t)
    one = gs[0].allocate_vocab_mask(151936, 6, "cpu")
    for i, g in enumerate(gs):
        g.fill_vocab_mask(one, i + 1)
    batch = gs[0].allocate_vocab_mask(151936, 6, "cpu")
    batch[0].fill_(7)
    batch[5].fill_(9)
    dsgl.DwacGrammar.fill_vocab_mask_batched([base.GrammarRow(i + 1, g) for i, g in enumerate(gs)], batch)
    assert torch.equal(batch[1:5], one[1:5])
    assert int(batch[0][0]) == 7 and int(batch[5][0]) == 9, "unlisted rows changed"


def test_speculative_accept_and_rollback(backend):
    b, tok = backend
    g = grammar_of(b, ("json", json.dumps(SCHEMA))).copy()
    ids = tok.encode('{"city": "Oslo"', add_special_tokens=False)
    g.accept_token(ids[0])
    after_one = g.allocate_vocab_mask(151936, 1, "cpu")
    g.fill_vocab_mask(after_one, 0)
    for t in ids[1:]:
        g.accept_token(t)
    g.rollback(len(ids) - 1)
    again = g.allocate_vocab_mask(151936, 1, "cpu")
    g.fill_vocab_mask(again, 0)
    assert torch.equal(after_one, again)
    with pytest.raises(ValueError):
        g.accept_token(tok.encode("]", add_special_tokens=False)[0])


def test_a_cache_hit_is_a_fresh_state(backend):
    b, tok = backend
    key = ("json", json.dumps(SCHEMA))
    first = grammar_of(b, key)
    first.accept_token(tok.encode("{", add_special_tokens=False)[0])
    hit, was_hit = b.get_cached_or_future_value(key, False)
    assert was_hit and hit is not first and hit.grammar is first.grammar
    assert hit.grammar_stats.is_cache_hit
    walk(hit, tok, '{"city": "Oslo"}', tok.eos_token_id)


def test_reasoning_is_unconstrained_until_the_think_end(model_dir):
    b, tok = make_backend(model_dir, reasoning_parser="qwen3")
    g = grammar_of(b, ("json", json.dumps(SCHEMA))).copy()
    g.maybe_init_reasoning(True)
    m = g.allocate_vocab_mask(151936, 1, "cpu")
    for t in tok.encode("Let me think. ]]] done", add_special_tokens=False):
        g.fill_vocab_mask(m, 0)
        assert int(m[0].eq(-1).all()), "constrained while reasoning"
        g.accept_token(t)
    end = tok.encode("</think>", add_special_tokens=False)
    for t in end:
        g.accept_token(t)
    g.fill_vocab_mask(m, 0)
    constrained = allowed(m[0])
    assert tok.encode("{", add_special_tokens=False)[0] in constrained
    assert tok.encode("]", add_special_tokens=False)[0] not in constrained
    # Rolled back over the think-end, the request reasons again.
    g.rollback(1)
    g.fill_vocab_mask(m, 0)
    assert int(m[0].eq(-1).all())
    # A request that does not reason is constrained from its first token.
    plain = grammar_of(b, ("json", json.dumps(SCHEMA))).copy()
    plain.maybe_init_reasoning(False)
    plain.fill_vocab_mask(m, 0)
    assert tok.encode("]", add_special_tokens=False)[0] not in allowed(m[0])


def test_jump_forward_and_retokenize(backend):
    b, tok = backend
    g = grammar_of(b, ("regex", r"answer: (yes|no)")).copy()
    helper = g.try_jump_forward(tok)
    assert helper is not None
    s, _ = g.jump_forward_str_state(helper)
    assert s == "answer: "
    ids = tok.encode("answer: ", add_special_tokens=False)
    g.jump_and_retokenize([], ids, -1)
    walk(g, tok, "yes", tok.eos_token_id)


def test_apply_vocab_mask_on_cpu_logits(backend):
    b, _ = backend
    g = grammar_of(b, ("regex", "[0-9]")).copy()
    m = g.allocate_vocab_mask(151936, 1, "cpu")
    g.fill_vocab_mask(m, 0)
    logits = torch.zeros((1, 151936))
    g.apply_vocab_mask(logits, m)
    finite = set(torch.isfinite(logits[0]).nonzero().flatten().tolist())
    assert finite == allowed(m[0]) and 0 < len(finite) < 100


def test_a_free_whitespace_pattern_is_refused_when_the_backend_starts(model_dir):
    with pytest.raises(ValueError, match="constrained-json-whitespace-pattern"):
        make_backend(model_dir, constrained_json_whitespace_pattern=r"[\n\t ]*")
