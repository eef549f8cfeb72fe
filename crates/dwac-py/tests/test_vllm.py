"""``dwac.integrations.vllm`` inside vLLM's own structured-output code (no stand-ins): the
plug-in registered, the frontend's request checks, vLLM's ``StructuredOutputManager`` driving the
dwac backend on every request kind and its refusals, speculative validate/accept/rollback, the
artifact directory, and vLLM's other backends left as they were.

Needs vLLM importable (``cargo dwac-bench servers`` builds such an environment); skipped
otherwise (CI runs the package's own tests without it)."""

import json
import os
import time

import numpy as np
import pytest

vllm = pytest.importorskip("vllm")
torch = pytest.importorskip("torch")

import dwac  # noqa: E402
from dwac.integrations import vllm as dvllm  # noqa: E402

VOCAB = 151936
EOS = 151645  # <|im_end|>
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}


def make_manager(model_dir, backend="dwac", **so_options):
    """vLLM's StructuredOutputManager on CPU, as vLLM's own manager tests build it."""
    from vllm.config import DeviceConfig, ModelConfig, SchedulerConfig, StructuredOutputsConfig, VllmConfig
    from vllm.v1.structured_output import StructuredOutputManager

    dvllm.register()
    model = ModelConfig(model=str(model_dir), tokenizer=str(model_dir), dtype="float32", max_model_len=1024)
    config = VllmConfig(
        model_config=model,
        device_config=DeviceConfig(device="cpu"),
        scheduler_config=SchedulerConfig(max_num_seqs=8, max_model_len=1024, is_encoder_decoder=False),
        structured_outputs_config=StructuredOutputsConfig(backend=backend, **so_options),
    )
    return StructuredOutputManager(config)


_ids = iter(range(1_000_000))


def request(manager, **constraint):
    """A vLLM request with `constraint` (StructuredOutputsParams' fields), checked by the
    frontend as vLLM checks it, its grammar compiled by the manager."""
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams
    from vllm.v1.request import Request

    params = SamplingParams(max_tokens=64, structured_outputs=StructuredOutputsParams(**constraint))
    config = manager.vllm_config
    params._validate_structured_outputs(config.model_config, config.structured_outputs_config, manager.tokenizer)
    params.update_from_generation_config({}, EOS)  # (as vLLM's input processor does)
    r = Request(f"r{next(_ids)}", [1, 2, 3], params, None)
    manager.grammar_init(r)
    deadline = time.time() + 60
    while not r.structured_output_request.is_grammar_ready:
        assert time.time() < deadline, "grammar never ready"
        time.sleep(0.005)
    return r


def grammar(r):
    g = r.structured_output_request.grammar
    if isinstance(g, Exception):
        raise g
    return g


def allowed(row):
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")[:VOCAB]
    return set(np.flatnonzero(bits).tolist())


def step_mask(manager, r):
    return manager.grammar_bitmask({r.request_id: r}, [r.request_id], {})[0]


def walk(manager, r, text, end=True):
    """Every token of `text` checked against the mask vLLM builds, then committed through the
    manager; then the end token allowed (if `end`)."""
    for t in manager.tokenizer.encode(text, add_special_tokens=False):
        assert t in allowed(step_mask(manager, r)), (text, t, manager.tokenizer.decode([t]))
        assert manager.accept_tokens(r, [t])
    mask = allowed(step_mask(manager, r))
    if end:
        assert EOS in mask, text
        assert manager.accept_tokens(r, [EOS])
        assert grammar(r).is_terminated()
    return mask


def refused(manager, text_so_far, r, text):
    """`text` (after the walked prefix) has a token the mask refuses."""
    for t in manager.tokenizer.encode(text, add_special_tokens=False):
        if t not in allowed(step_mask(manager, r)):
            return True
        assert manager.accept_tokens(r, [t])
    return EOS not in allowed(step_mask(manager, r))


@pytest.fixture(scope="module")
def manager(model_dir):
    return make_manager(model_dir)


def test_dwac_is_a_backend_and_the_others_are_unchanged():
    from vllm.config import StructuredOutputsConfig

    dvllm.register()
    dvllm.register()  # (vLLM loads plug-ins once per process, but more is harmless)
    c = StructuredOutputsConfig(backend="dwac", disable_any_whitespace=True, disable_additional_properties=True)
    assert c.backend == "dwac"
    assert StructuredOutputsConfig(backend="xgrammar").backend == "xgrammar"
    with pytest.raises(Exception, match="only supported"):
        StructuredOutputsConfig(backend="xgrammar", disable_additional_properties=True)
    with pytest.raises(Exception):
        StructuredOutputsConfig(backend="no-such-backend")
    from importlib.metadata import entry_points

    names = {e.value for e in entry_points(group="vllm.general_plugins")}
    if names:  # (installed with its metadata, as `maturin develop` or a wheel does)
        assert "dwac.integrations.vllm:register" in names


def test_every_request_kind(manager):
    walk(manager, request(manager, json=SCHEMA), '{"city": "Oslo", "days": 3}')
    walk(manager, request(manager, json=json.dumps(SCHEMA)), '{"city":"Rome"}')
    walk(manager, request(manager, json_object=True), '{"any": [1, {"x": null}]}')
    walk(manager, request(manager, regex=r"[a-z]+@[a-z]+\.com"), "ann@example.com")
    walk(manager, request(manager, grammar='root ::= "yes" | "no" ws\nws ::= [ ]*'), "no  ")
    walk(manager, request(manager, grammar='start: "go" NUM\nNUM: /[0-9]+/'), "go42")
    walk(manager, request(manager, choice=["red apple", 'say "hi"\n', "blue"]), 'say "hi"\n')
    legacy = {"structures": [{"begin": "<f>", "schema": SCHEMA, "end": "</f>"}], "triggers": ["<f>"]}
    walk(manager, request(manager, structural_tag=json.dumps(legacy)), 'hello <f>{"city": "Oslo"}</f> bye')
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<a>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</a>"}}
    walk(manager, request(manager, structural_tag=json.dumps(tag)), '<a>{"city": "X"}</a>')


def test_the_masks_refuse_what_the_constraint_refuses(manager):
    assert refused(manager, "", request(manager, json=SCHEMA), '{"days": 3}')  # required city
    assert refused(manager, "", request(manager, choice=["red", "blue"]), "green")
    assert refused(manager, "", request(manager, regex="[0-9]{2}"), "123")
    assert refused(manager, "", request(manager, json_object=True), "[1]")


def test_json_whitespace_is_bounded_by_default(manager):
    r = request(manager, json=SCHEMA)
    space = manager.tokenizer.encode(" ", add_special_tokens=False)
    assert len(space) == 1
    assert manager.accept_tokens(r, manager.tokenizer.encode("{", add_special_tokens=False))
    for _ in range(dvllm.DEFAULT_MAX_WHITESPACE):
        assert space[0] in allowed(step_mask(manager, r))
        assert manager.accept_tokens(r, space)
    assert space[0] not in allowed(step_mask(manager, r))


def test_per_request_options(manager):
    r = request(manager, json=SCHEMA, disable_any_whitespace=True)
    walk(manager, r, '{"city":"Oslo","days":3}')
    r = request(manager, json=SCHEMA, disable_any_whitespace=True)
    assert refused(manager, "", r, '{"city": "Oslo"}')
    open_schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    walk(manager, request(manager, json=open_schema), '{"a": 1, "b": true}')
    assert refused(manager, "", request(manager, json=open_schema, disable_additional_properties=True), '{"a": 1, "b": true}')
    walk(manager, request(manager, json_object=True, disable_any_whitespace=True), '{"k":[1,2]}')
    from vllm.exceptions import VLLMValidationError

    with pytest.raises(VLLMValidationError, match="whitespace_pattern"):
        request(manager, json=SCHEMA, whitespace_pattern=r"[ ]?")


def test_server_options(model_dir):
    m = make_manager(model_dir, disable_any_whitespace=True, disable_additional_properties=True)
    walk(m, request(m, json={"type": "object", "properties": {"a": {"type": "integer"}}}), '{"a":1}')
    assert refused(m, "", request(m, json={"type": "object", "properties": {"a": {"type": "integer"}}}), '{"a":1,"b":2}')


@pytest.mark.parametrize(
    "constraint, message, where",
    [
        ({"json": {"type": "object", "properties": {"a": {"type": "string", "$dynamicRef": "#a"}}}}, r"\$dynamicRef.*/properties/a", "frontend"),
        ({"json": '{"type": "object", "properties": {"a": {"type": "strin"}}}'}, "strin", "frontend"),
        ({"grammar": 'root ::= "a" | \nbad ::= ['}, r"grammar:\d+:\d+", "frontend"),
        ({"grammar": "start: UNDEFINED_RULE x"}, r"grammar:\d+:\d+", "frontend"),
        ({"json": "{not json"}, "JSON", "frontend"),
        ({"structural_tag": '{"type": "structural_tag", "format": {"type": "nope"}}'}, "nope", "frontend"),
        ({"regex": "(unclosed"}, "regex", "frontend"),
        ({"json": {"type": "integer", "minimum": 5, "maximum": 1}}, "no JSON value", "engine"),
    ],
)
def test_refusals_fail_only_their_request(manager, constraint, message, where):
    """A bad source is refused for its request alone: at the frontend (vLLM's 400) where parsing
    it finds the fault, else when the engine compiles it (the request fails); the next request is
    served."""
    import re

    from vllm.exceptions import VLLMValidationError

    good = request(manager, json=SCHEMA)
    if where == "frontend":
        with pytest.raises(VLLMValidationError) as e:
            request(manager, **constraint)
        text = str(e.value)
    else:
        r = request(manager, **constraint)
        g = r.structured_output_request.grammar
        assert isinstance(g, Exception), f"{constraint} compiled"
        text = str(g)
    assert text.startswith("dwac: "), text
    assert re.search(message, text), text
    walk(manager, good, '{"city": "Oslo"}')


def test_speculative_validate_accept_rollback(manager):
    r = request(manager, json=SCHEMA)
    g = grammar(r)
    tok = manager.tokenizer
    good = tok.encode('{"city": "Oslo"}', add_special_tokens=False)
    bad = tok.encode('{"days"', add_special_tokens=False)
    assert g.validate_tokens(good + [EOS]) == good + [EOS]
    assert g.num_processed_tokens == 0
    n = len(g.validate_tokens(bad))
    assert n < len(bad)
    before = allowed(step_mask(manager, r))
    assert not g.accept_tokens(r.request_id, bad)  # refused: nothing changes
    assert g.num_processed_tokens == 0
    assert allowed(step_mask(manager, r)) == before
    assert g.accept_tokens(r.request_id, good[:3])
    g.rollback(2)
    assert g.num_processed_tokens == 1
    assert g.accept_tokens(r.request_id, good[1:] + [EOS])
    assert g.is_terminated()
    assert g.accept_tokens(r.request_id, [5, 6])  # (after the end: ignored)
    g.rollback(1)
    assert not g.is_terminated()
    g.reset()
    assert g.num_processed_tokens == 0 and allowed(step_mask(manager, r)) == before


def test_batch_bitmask_and_terminated_rows(manager):
    """The batch step (dwac fills every row in one call) equals each request's own mask (one
    request: vLLM's own path), and a terminated request's row is left open as vLLM leaves it."""
    rs = [request(manager, json=SCHEMA), request(manager, choice=["a", "b"]), request(manager, regex="x+")]
    ids = [r.request_id for r in rs]
    reqs = {r.request_id: r for r in rs}
    assert manager.accept_tokens(rs[1], manager.tokenizer.encode("a", add_special_tokens=False) + [EOS])
    mask = manager.grammar_bitmask(reqs, ids, {})
    assert mask.shape == (3, (VOCAB + 31) // 32)
    assert allowed(mask[0]) == allowed(step_mask(manager, rs[0]))
    assert len(allowed(mask[1])) == VOCAB  # terminated: vLLM leaves the row open
    assert allowed(mask[2]) == allowed(step_mask(manager, rs[2]))
    assert manager.tokenizer.encode("x", add_special_tokens=False)[0] in allowed(mask[2])


@pytest.mark.parametrize("batch", [1, 3])
def test_reasoning_is_vllms_and_the_batch_step_keeps_it(model_dir, batch):
    """With a reasoning parser, vLLM feeds the grammar only after the think-end token: until
    then the rows stay open, in vLLM's own step (one request) and in dwac's batch step (more)."""
    m = make_manager(model_dir, reasoning_parser="deepseek_r1")
    rs = [request(m, json=SCHEMA) for _ in range(batch)]
    ids = [r.request_id for r in rs]
    reqs = {r.request_id: r for r in rs}
    tok = m.tokenizer
    think = tok.encode("Let me think.", add_special_tokens=False)
    for r in rs:
        assert m.accept_tokens(r, think)
    mask = m.grammar_bitmask(reqs, ids, {})
    for row in mask:
        assert len(allowed(row)) == VOCAB  # still reasoning: unconstrained
    end = tok.convert_tokens_to_ids("</think>")
    for r in rs:
        assert m.accept_tokens(r, [end])
    mask = m.grammar_bitmask(reqs, ids, {})
    brace = tok.encode("{", add_special_tokens=False)[0]
    letter = tok.encode("x", add_special_tokens=False)[0]
    for row in mask:
        a = allowed(row)
        assert brace in a and letter not in a  # the schema's object from here on
    for r in rs:
        walk(m, r, '{"city": "Oslo"}')


def test_the_end_tokens_are_the_requests(manager):
    """vLLM passes the request's end and stop tokens: each is allowed exactly where the output
    may end, and nowhere else."""
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams
    from vllm.v1.request import Request

    stop = manager.tokenizer.encode("!", add_special_tokens=False)[0]
    params = SamplingParams(max_tokens=8, stop_token_ids=[stop], structured_outputs=StructuredOutputsParams(choice=["ab!", "cd"]))
    config = manager.vllm_config
    params._validate_structured_outputs(config.model_config, config.structured_outputs_config, manager.tokenizer)
    params.update_from_generation_config({}, EOS)
    assert params.all_stop_token_ids == {EOS, stop}
    r = Request("stops", [1], params, None)
    manager.grammar_init(r)
    while not r.structured_output_request.is_grammar_ready:
        time.sleep(0.005)
    g = grammar(r)
    assert stop not in allowed(step_mask(manager, r))
    assert manager.accept_tokens(r, manager.tokenizer.encode("cd", add_special_tokens=False))
    assert {stop, EOS} <= allowed(step_mask(manager, r))
    assert g.is_terminated() is False


def test_artifact_directory(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("DWAC_CACHE_DIR", str(tmp_path))
    m = make_manager(model_dir)
    walk(m, request(m, json=SCHEMA), '{"city": "Oslo"}')
    files = list(tmp_path.glob("*.dwa"))
    assert len(files) == 1
    m2 = make_manager(model_dir)  # (a fresh process's backend: nothing in memory)
    r = request(m2, json=SCHEMA)
    info = m2.backend.compiler(r.sampling_params.all_stop_token_ids).cache_info()
    assert info["disk_hits"] == 1, info
    walk(m2, r, '{"city": "Oslo"}')
    files[0].write_bytes(files[0].read_bytes()[:100])  # a truncated file: compiled again
    m3 = make_manager(model_dir)
    r = request(m3, json=SCHEMA)
    info = m3.backend.compiler(r.sampling_params.all_stop_token_ids).cache_info()
    assert info["disk_bad_files"] == 1, info
    walk(m3, r, '{"city": "Oslo"}')


def test_other_backends_are_not_replaced(model_dir):
    m = make_manager(model_dir, backend="xgrammar")
    r = request(m, json=SCHEMA)
    assert type(m.backend).__name__ == "XgrammarBackend"
    assert r.sampling_params.structured_outputs._backend == "xgrammar"
    walk(m, r, '{"city": "Oslo"}')


def test_gbnf_or_lark():
    assert dvllm.is_gbnf('root ::= "a"')
    assert dvllm.is_gbnf('# comment\nroot ::= x\nx ::= "b"')
    assert not dvllm.is_gbnf('start: "a"  // a ::= b in a comment')
    assert dvllm.choice_grammar(['a"b', "c\\d\n"]) == 'root ::= "a\\"b" | "c\\\\d\\x0a"'
    with pytest.raises(dwac.DwacError):
        dvllm.choice_grammar([])


@pytest.mark.skipif(not os.environ.get("DWAC_VLLM_MODEL"), reason="needs a model folder (DWAC_VLLM_MODEL; cargo dwac-bench servers sets it)")
def test_the_llm_api_generates_through_dwac():
    """vLLM's Python API, as the README says to use it: register, then
    LLM(structured_outputs_config={"backend": "dwac"}); a real model's output is valid."""
    import jsonschema

    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    dvllm.register()
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    llm = LLM(model=os.environ["DWAC_VLLM_MODEL"], dtype="float32", max_model_len=1024, enforce_eager=True,
              structured_outputs_config={"backend": "dwac"})
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "days": {"type": "integer"}},
              "required": ["city", "days"], "additionalProperties": False}
    params = SamplingParams(max_tokens=80, temperature=0, structured_outputs=StructuredOutputsParams(json=schema))
    out = llm.generate(["Plan a trip. Answer as JSON with a city and a number of days: "], params)[0].outputs[0]
    assert out.finish_reason == "stop", out
    jsonschema.validate(json.loads(out.text), schema)
    choice = SamplingParams(max_tokens=8, temperature=0, structured_outputs=StructuredOutputsParams(choice=["yes", "no"]))
    assert llm.generate(["Is water wet? "], choice)[0].outputs[0].text in ("yes", "no")
