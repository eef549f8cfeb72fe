"""dwac as an SGLang grammar backend: ``python -m sglang.launch_server --model-path M
--grammar-backend dwac``.

Installing the ``dwac`` package is all it takes: its entry point ``dwac`` in the group
``sglang.srt.plugins`` (``register`` below) is run by SGLang in every process it starts, before
its arguments are parsed, and registers the backend under the name ``dwac``
(``register_grammar_backend``) and as a choice of ``--grammar-backend``. Nothing here is
imported unless SGLang loads it.

What the backend does with each kind of request SGLang dispatches:

- ``json``: the JSON Schema compiled exactly (``"$$ANY$$"``, SGLang's "any JSON value", is the
  schema ``{}``). ``--constrained-json-disable-any-whitespace`` compiles compact JSON;
  ``--constrained-json-max-whitespace-cnt N`` bounds the whitespace around punctuation;
  ``--constrained-json-whitespace-pattern`` (a free regex) cannot be honoured exactly and is
  refused when the backend starts, naming it.
- ``regex``: the regular expression; ``ebnf`` (and ``full_assistant_ebnf``): GBNF, the
  llama.cpp grammar format SGLang's EBNF follows; ``structural_tag``: XGrammar's structural tags,
  both the ``{"structures", "triggers"}`` form and the ``{"format"}`` form, tool calls included.
- Anything the compiler cannot honour becomes SGLang's ``InvalidGrammarObject`` for that request,
  with dwac's one-line message (the keyword and its JSON pointer, the grammar's line:column, a
  budget); no other request is touched.

Compiles run on SGLang's grammar thread pool with the GIL released, within a budget
(``DWAC_MAX_SECONDS``, default 10; ``DWAC_MAX_MEMORY_MB``, default 2048); a refused request is
remembered and fails at once when it comes again. With ``DWAC_CACHE_DIR`` set, artifacts are
looked for there under the request's key before compiling (``dwac compile --cache-dir``
precompiles them in CI) and what is compiled is written there for the other processes and the
next start.

Masks: ``fill_vocab_mask_batched`` fills the whole batch in one call, in parallel with the GIL
released. Speculative decoding: ``accept_token`` and ``rollback`` (up to ``MAX_ROLLBACK``
tokens). Reasoning: SGLang does not wrap registered backends in its reasoning wrapper, so with a
reasoning parser (``--reasoning-parser``), a request that reasons is unconstrained until the
model's think-end token(s), then constrained from the next token on.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import List, Optional, Sequence, Tuple

import torch

import dwac
from dwac import tools
from dwac.integrations import _settings

from sglang.srt.constrained import base_grammar_backend as _base
from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    GrammarStats,
    InvalidGrammarObject,
)

logger = logging.getLogger(__name__)

NAME = "dwac"

#: Tokens a request's grammar can be rolled back by (speculative decoding's drafts).
MAX_ROLLBACK = 200

#: The think-end text of SGLang's reasoning parsers (``--reasoning-parser``), by parser name.
THINK_END = {
    "deepseek-r1": "</think>",
    "deepseek-v3": "</think>",
    "qwen3": "</think>",
    "qwen3-thinking": "</think>",
    "glm45": "</think>",
    "kimi": "◁/think▷",
    "step3": "</think>",
    "minimax": "</think>",
    "minimax-append-think": "</think>",
}


def register() -> None:
    """The entry point SGLang runs (group ``sglang.srt.plugins``): the backend under the name
    ``dwac`` and ``--grammar-backend dwac`` a valid choice. Refuses, naming the version, on an
    SGLang without the registry this needs."""
    try:
        from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices
    except ImportError as e:  # pragma: no cover - depends on the installed SGLang
        raise RuntimeError(f"dwac: SGLang {_sglang_version()} has no grammar backend choices to add to ({e})") from e
    if not hasattr(_base, "register_grammar_backend"):  # pragma: no cover
        raise RuntimeError(f"dwac: SGLang {_sglang_version()} has no register_grammar_backend")
    if NAME not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([NAME])
    _base.register_grammar_backend(NAME, DwacGrammarBackend.from_server)


def _sglang_version() -> str:
    try:
        from importlib.metadata import version

        return version("sglang")
    except Exception:  # pragma: no cover
        return "(unknown version)"


class _MaskMoves:
    """What SGLang asks of both the backend and its grammar objects: moving a mask to the
    logits' device and applying it."""

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        _apply(logits, vocab_mask)


class DwacGrammarBackend(_MaskMoves, BaseGrammarBackend):
    """Compiles each request's constraint with a ``dwac.Compiler`` (cached by source and options,
    refusals too, and by key in ``cache_dir``)."""

    def __init__(
        self,
        tokenizer,
        vocab_size: int,
        eos_token_ids: Optional[Sequence[int]] = None,
        *,
        compact: bool = False,
        max_whitespace: Optional[int] = None,
        think_end: Optional[str] = None,
        cache_dir: Optional[str] = None,
        max_seconds: Optional[float] = dwac.DEFAULT_MAX_SECONDS,
        max_memory_mb: Optional[int] = dwac.DEFAULT_MAX_MEMORY_MB,
    ):
        super().__init__()
        eos = sorted(eos_token_ids) if eos_token_ids else None
        self.tokenizer = dwac.tokenizer_from_hf(tokenizer, eos_token_ids=eos, vocab_size=vocab_size)
        self.vocab_size = vocab_size
        self.compact = compact
        self.max_whitespace = max_whitespace
        self.compiler = dwac.Compiler(
            self.tokenizer, max_seconds=max_seconds, max_memory_mb=max_memory_mb, cache_dir=cache_dir
        )
        # The think-end token ids (empty: no reasoning parser, constrained from the start).
        self.think_end_ids: Tuple[int, ...] = ()
        if think_end:
            ids = tokenizer.encode(think_end, add_special_tokens=False)
            if not ids:
                raise ValueError(f"dwac: the tokenizer spells the think-end text {think_end!r} with no token")
            self.think_end_ids = tuple(ids)

    @classmethod
    def from_server(cls, server_args, tokenizer, vocab_size: int, eos_token_ids=None) -> "DwacGrammarBackend":
        """The ``init_func`` SGLang's registry calls: the server's JSON whitespace options and
        reasoning parser, the environment's cache directory and budgets."""
        pattern = getattr(server_args, "constrained_json_whitespace_pattern", None)
        if pattern:
            raise ValueError(
                "dwac: --constrained-json-whitespace-pattern cannot be honoured exactly (a free regex between "
                "JSON tokens); leave it out, or bound the whitespace with --constrained-json-max-whitespace-cnt"
            )
        parser = getattr(server_args, "reasoning_parser", None)
        think_end = THINK_END.get(parser) if parser else None
        if parser and think_end is None:
            raise ValueError(
                f"dwac: no think-end text known for the reasoning parser {parser!r} "
                f"(known: {', '.join(sorted(THINK_END))})"
            )
        return cls(
            tokenizer,
            vocab_size,
            eos_token_ids,
            compact=bool(getattr(server_args, "constrained_json_disable_any_whitespace", False)),
            max_whitespace=getattr(server_args, "constrained_json_max_whitespace_cnt", None),
            think_end=think_end,
            cache_dir=_settings.cache_dir(),
            **_settings.budget(),
        )

    def _object(self, kind: str, key_string: str, compile) -> BaseGrammarObject:
        try:
            grammar = compile()
        except dwac.DwacError as e:
            logger.warning("dwac refused a %s request: %s", kind, e)
            return InvalidGrammarObject(str(e))
        return DwacGrammar(grammar, self.think_end_ids, key_string, GrammarStats(dispatch_type=kind))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        schema = "{}" if key_string == "$$ANY$$" else key_string
        ws = "compact" if self.compact else "flexible"
        mw = None if self.compact else self.max_whitespace
        return self._object(
            "json", key_string, lambda: self.compiler.json_schema(schema, whitespace=ws, max_whitespace=mw)
        )

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._object("regex", key_string, lambda: self.compiler.regex(key_string))

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._object("ebnf", key_string, lambda: self.compiler.gbnf(key_string))

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._object(
            "structural_tag", key_string, lambda: self.compiler.structural_tag(tools.structural_tag_from_legacy(key_string))
        )

    def dispatch_fallback(self, key_type: str, key_string: str) -> BaseGrammarObject:
        return InvalidGrammarObject(f"dwac: no constraint of kind {key_type!r} (json, regex, ebnf, structural_tag)")

    @staticmethod
    def allocate_vocab_mask(vocab_size: int, batch_size: int, device) -> torch.Tensor:
        return _allocate(vocab_size, batch_size)

    def reset(self):
        super().reset()
        self.compiler.clear()


def _allocate(vocab_size: int, batch_size: int) -> torch.Tensor:
    return dwac.allocate_token_bitmask_torch(batch_size, vocab_size)


def _apply(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
    """Disallowed logits to -inf, on the logits' device (bit ``v % 32`` of word ``v // 32``)."""
    if logits.device.type == "cpu" and vocab_mask.device.type == "cpu":
        dwac.apply_token_bitmask_inplace(logits, vocab_mask)
        return
    mask = vocab_mask.to(logits.device, non_blocking=True)
    n = logits.shape[-1]
    shifts = torch.arange(32, device=logits.device, dtype=torch.int32)
    bits = (mask.unsqueeze(-1) >> shifts) & 1
    allowed = bits.reshape(mask.shape[0], -1)[:, :n].to(torch.bool)
    logits.view(-1, n)[: allowed.shape[0]].masked_fill_(~allowed, float("-inf"))


class DwacGrammar(_MaskMoves, BaseGrammarObject):
    """One request's state: a ``dwac.Matcher`` (and, with a reasoning parser, where the request
    is in its reasoning)."""

    def __init__(
        self,
        grammar: "dwac.Grammar",
        think_end_ids: Tuple[int, ...] = (),
        key_string: Optional[str] = None,
        grammar_stats: Optional[GrammarStats] = None,
    ):
        super().__init__()
        self.grammar = grammar
        self.matcher = grammar.matcher(max_rollback=MAX_ROLLBACK)
        self.think_end_ids = think_end_ids
        self.key_string = key_string
        self.grammar_stats = grammar_stats
        # Reasoning: tokens of the think-end sequence matched so far, or None once the grammar
        # applies; per accepted token, (went to the matcher, think-end tokens matched before).
        self.reasoning: Optional[int] = None
        self.history: List[Tuple[bool, Optional[int]]] = []

    def maybe_init_reasoning(self, reasoning: bool):
        self.reasoning = 0 if (reasoning and self.think_end_ids) else None

    def accept_token(self, token: int) -> None:
        if self.is_terminated():
            return
        self.current_token = token
        if self.reasoning is not None:
            before = self.reasoning
            matched = before + 1 if token == self.think_end_ids[before] else int(token == self.think_end_ids[0])
            self.reasoning = None if matched == len(self.think_end_ids) else matched
            self.history.append((False, before))
            return
        if not self.matcher.accept_token(token):
            raise ValueError(f"dwac: token {token} is not allowed here (request {self.key_string!r:.200})")
        self.history.append((True, None))

    def rollback(self, k: int) -> None:
        to_matcher = 0
        for _ in range(min(k, len(self.history))):
            went, before = self.history.pop()
            if went:
                to_matcher += 1
            else:
                self.reasoning = before
        if to_matcher:
            self.matcher.rollback(to_matcher)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> torch.Tensor:
        return _allocate(vocab_size, batch_size)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        if self.reasoning is not None:
            vocab_mask[idx].fill_(-1)
        else:
            self.matcher.fill_next_token_bitmask(dwac.bitmask_array(vocab_mask), idx)

    @staticmethod
    def fill_vocab_mask_batched(entries, vocab_mask: torch.Tensor) -> None:
        """Every listed row in one call, in parallel with the GIL released (rows of requests
        still reasoning: everything allowed); unlisted rows untouched."""
        matchers, rows = [], []
        for row, grammar in entries:
            if not isinstance(grammar, DwacGrammar):
                grammar.fill_vocab_mask(vocab_mask, row)
            elif grammar.reasoning is not None:
                vocab_mask[row].fill_(-1)
            else:
                matchers.append(grammar.matcher)
                rows.append(row)
        if len(matchers) == 1:  # (one row: no thread pool to wake)
            matchers[0].fill_next_token_bitmask(dwac.bitmask_array(vocab_mask), rows[0])
        elif matchers:
            dwac.fill_next_token_bitmask_batch(matchers, dwac.bitmask_array(vocab_mask), rows)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    def copy(self) -> "DwacGrammar":
        stats = self.grammar_stats
        if stats is not None:
            stats = dataclasses.replace(stats, is_cache_hit=True, tree_traversal_time=[])
        return DwacGrammar(self.grammar, self.think_end_ids, self.key_string, stats)

    def try_jump_forward(self, tokenizer) -> Optional[Tuple[List[int], str]]:
        """The text every continuation starts with (``Matcher.forced_bytes``), if any."""
        if self.reasoning is not None:
            return None
        forced = self.matcher.forced_bytes(256)
        # (The longest prefix that is whole UTF-8 characters.)
        for end in range(len(forced), 0, -1):
            try:
                text = forced[:end].decode("utf-8")
            except UnicodeDecodeError:
                continue
            return [], text
        return None

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int], next_state: int) -> None:
        k = 0
        for a, b in zip(old_output_ids, new_output_ids):
            if a != b:
                break
            k += 1
        if k < len(old_output_ids):
            self.rollback(len(old_output_ids) - k)
        for t in new_output_ids[k:]:
            self.accept_token(t)

    def __repr__(self) -> str:
        return f"DwacGrammar(key_string={self.key_string!r:.80}, reasoning={self.reasoning})"
