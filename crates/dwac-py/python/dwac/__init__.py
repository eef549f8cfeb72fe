"""dwac: exact grammar- and JSON-Schema-constrained decoding.

Compile a grammar once (``Grammar.from_json_schema``, ``from_lark``, ``from_gbnf``,
``from_regex``; or ``Grammar.open`` a precompiled artifact), then per sequence a ``Matcher``:

    tok = dwac.Tokenizer.from_file("tokenizer.json")
    grammar = dwac.Grammar.from_json_schema({"type": "object"}, tok)
    m = dwac.Matcher(grammar)
    bitmask = dwac.allocate_token_bitmask(1, n_logits)
    m.fill_next_token_bitmask(bitmask)            # before sampling
    dwac.apply_token_bitmask_inplace(logits, bitmask)
    m.accept_token(token)                         # after sampling

A model whose logits outnumber the tokenizer's ids (padded embeddings, e.g. Qwen's 151,936
against 151,669) declares its width once: ``Tokenizer.from_file(path, vocab_size=n_logits)``
(or ``tok.with_vocab_size(n)``); masks are then that wide with the padding ids disallowed, and
the fingerprint, so the artifacts, stay those of the tokenizer.

Every compile runs within a budget: ``max_seconds`` (default 10) and ``max_memory_mb`` (default
2048, the MiB the compile itself allocates, counted apart from whatever else the process does)
on ``Grammar.from_*`` and ``Compiler``. Past either, the compile stops within milliseconds,
frees what it allocated and raises ``DwacError`` with the CLI's message ("schema: compilation
exceeded its time budget of 10 s (max_seconds)"); ``None`` lifts a limit. A ``Compiler``
remembers refusals as it remembers grammars: the same request fails at once the next time.

Bitmasks are int32 arrays of shape ``[batch, ceil(vocab_size / 32)]``, bit ``v % 32`` of word
``v // 32`` set iff token ``v`` is allowed: the layout vLLM, SGLang, XGrammar and llguidance
use. Masks are written in place into numpy arrays or CPU torch tensors (no copy).

Masks come from the compiled Parser DWA; two paths are slow and counted, for a server to watch:
tokens the compiler left UNDECIDED (``Grammar.undecided_tokens`` (lexer state, token) pairs,
e.g. in character-level ambiguous Lark grammars) are decided at run time by committing them,
and a mask the DWA does not cover is the reference mask (a fallback). ``Matcher.counters()``
returns a dict: the last fill's ``undecided``, ``fallbacks`` and ``reads``, and over the
matcher's life ``masks``, ``undecided_total``, ``fallbacks_total`` and
``masks_with_undecided``; every fill path adds to it (``fill_next_token_bitmask``, the batch
fill, ``fill_next_token_bitmask_batch``, each row to its matcher). ``reset`` keeps the counts;
a ``fork`` starts from zero.
"""

from __future__ import annotations

import json as _json
from typing import Any, Optional, Sequence, Union

import numpy as _np

from . import _dwac
from ._dwac import DwacError, Tokenizer, Matcher, __version__  # noqa: F401
from . import tools
from . import tools as _tools_module

__all__ = [
    "DwacError",
    "Compiler",
    "tools",
    "Tokenizer",
    "Grammar",
    "Matcher",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "fill_next_token_bitmask",
    "fill_next_token_bitmask_batch",
    "tokenizer_from_hf",
    "allocate_token_bitmask_torch",
    "bitmask_array",
    "DEFAULT_MAX_SECONDS",
    "DEFAULT_MAX_MEMORY_MB",
    "cache_key",
    "check",
]


#: The compile budget a request gets unless it says otherwise: seconds, and MiB allocated by the
#: compile (``Grammar.from_*``, ``Compiler``).
DEFAULT_MAX_SECONDS: Optional[float] = 10.0
DEFAULT_MAX_MEMORY_MB: Optional[int] = 2048


def tokenizer_from_hf(
    tokenizer: Any,
    eos_token_ids: Optional[Sequence[int]] = None,
    vocab_size: Optional[int] = None,
) -> Tokenizer:
    """A ``Tokenizer`` from a Hugging Face tokenizer object: a ``tokenizers.Tokenizer`` or a
    ``transformers`` fast tokenizer (its ``backend_tokenizer``). The end tokens are taken from
    ``eos_token_ids``, else from the transformers tokenizer's ``eos_token_id``. ``vocab_size``:
    the model's number of logits when it exceeds the tokenizer's ids (e.g.
    ``model.config.vocab_size``); masks are that wide, with the padding ids disallowed."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if not hasattr(backend, "to_str"):
        raise DwacError(
            f"cannot read a vocabulary from {type(tokenizer).__name__}: "
            "pass a tokenizers.Tokenizer or a transformers fast tokenizer"
        )
    if eos_token_ids is None:
        eos = getattr(tokenizer, "eos_token_id", None)
        eos_token_ids = [eos] if isinstance(eos, int) else (list(eos) if eos else [])
    name = getattr(tokenizer, "name_or_path", None) or "tokenizer"
    return Tokenizer.from_json(backend.to_str(), str(name), list(eos_token_ids), vocab_size)


def _tokenizer(tokenizer: Any) -> Tokenizer:
    if tokenizer is None:
        return Tokenizer.default()
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if isinstance(tokenizer, str) or hasattr(tokenizer, "__fspath__"):
        return Tokenizer.from_file(tokenizer)
    return tokenizer_from_hf(tokenizer)


class Grammar:
    """A compiled grammar (an opened, verified artifact). Immutable; share it across threads."""

    __slots__ = ("_g", "tokenizer")

    def __init__(self, inner: "_dwac.Grammar", tokenizer: Optional[Tokenizer] = None):
        self._g = inner
        self.tokenizer = tokenizer

    @classmethod
    def from_json_schema(
        cls,
        schema: Union[str, dict, bool],
        tokenizer: Any = None,
        *,
        whitespace: str = "flexible",
        lenient: bool = False,
        draft: Optional[str] = None,
        max_whitespace: Optional[int] = None,
        strict: bool = False,
        max_seconds: Optional[float] = DEFAULT_MAX_SECONDS,
        max_memory_mb: Optional[int] = DEFAULT_MAX_MEMORY_MB,
    ) -> "Grammar":
        """Compile a JSON Schema (text or a parsed ``dict``). ``whitespace``: ``"flexible"``
        (any RFC 8259 whitespace between tokens) or ``"compact"`` (none). ``max_whitespace``:
        whitespace only around punctuation, at most this many characters on each side of a
        ``{ } [ ] , :`` (whitespace that cannot run away). ``lenient``: drop keywords that
        cannot be honoured exactly (listed in ``warnings``) instead of raising. ``draft``: the
        dialect when ``$schema`` names none. ``strict``: keys and items the schema does not
        name are not allowed (an object with ``properties`` and no ``additionalProperties``
        takes ``additionalProperties: false``), as XGrammar's ``strict_mode`` and OpenAI's
        strict function calling. ``max_seconds``, ``max_memory_mb``: the compile's budget (see
        the module's docstring). Releases the GIL."""
        if whitespace not in ("flexible", "compact"):
            raise DwacError(f"whitespace must be 'flexible' or 'compact', not {whitespace!r}")
        if max_whitespace is not None and whitespace == "compact":
            raise DwacError("max_whitespace bounds flexible whitespace; it cannot go with whitespace='compact'")
        text = schema if isinstance(schema, str) else _json.dumps(schema)
        tok = _tokenizer(tokenizer)
        g = _dwac.Grammar.compile(
            "json_schema",
            text,
            tok,
            whitespace == "compact",
            lenient,
            draft,
            max_whitespace=max_whitespace,
            strict=strict,
            max_seconds=max_seconds,
            max_memory_mb=max_memory_mb,
        )
        return cls(g, tok)

    @classmethod
    def from_structural_tag(
        cls,
        tag: Union[str, dict],
        tokenizer: Any = None,
        *,
        strict: bool = False,
        max_seconds: Optional[float] = DEFAULT_MAX_SECONDS,
        max_memory_mb: Optional[int] = DEFAULT_MAX_MEMORY_MB,
    ) -> "Grammar":
        """Compile an XGrammar structural tag (text or a parsed ``dict``): ``{"type":
        "structural_tag", "format": {...}}``, a bare format, or the older ``{"structures",
        "triggers"}`` form. Tool calls and reasoning blocks, special tokens included; anything
        not supported is refused by name. ``strict``: its JSON Schemas in strict mode (as
        ``from_json_schema``; the language XGrammar gives the same tag). ``max_seconds``,
        ``max_memory_mb``: the compile's budget. Releases the GIL."""
        text = tag if isinstance(tag, str) else _json.dumps(tag)
        tok = _tokenizer(tokenizer)
        g = _dwac.Grammar.compile(
            "structural_tag", text, tok, strict=strict, max_seconds=max_seconds, max_memory_mb=max_memory_mb
        )
        return cls(g, tok)

    @classmethod
    def from_tools(cls, tools: Union[list, dict, str], tokenizer: Any = None, *, format: str, **options: Any) -> "Grammar":
        """The grammar of an assistant turn with ``tools`` (an OpenAI ``tools`` list or a request
        ``dict``) in ``format``'s tool-call wire format: ``dwac.tools.structural_tag`` (its
        options: ``tool_choice``, ``parallel_tool_calls``, ``reasoning``, ``max_whitespace``),
        compiled (``strict``, ``max_seconds``, ``max_memory_mb`` as ``from_structural_tag``)."""
        compile_options = {k: options.pop(k) for k in ("strict", "max_seconds", "max_memory_mb") if k in options}
        return cls.from_structural_tag(
            _tools_module.structural_tag(tools, format, **options), tokenizer, **compile_options
        )

    @classmethod
    def _compile(
        cls,
        kind: str,
        source: str,
        tokenizer: Any,
        *,
        _mask_work_per_lexer_state: Optional[int] = None,
        strict: bool = False,
        max_seconds: Optional[float] = DEFAULT_MAX_SECONDS,
        max_memory_mb: Optional[int] = DEFAULT_MAX_MEMORY_MB,
    ) -> "Grammar":
        """``_mask_work_per_lexer_state`` is a diagnostic/test option (not for serving): the
        compiler's work budget per lexer state; a lexer state over it leaves all its tokens
        UNDECIDED, decided at run time by committing them (slow masks, counted by
        ``Matcher.counters()``). Recorded in the artifact's options."""
        tok = _tokenizer(tokenizer)
        return cls(
            _dwac.Grammar.compile(
                kind,
                source,
                tok,
                _mask_work_per_lexer_state=_mask_work_per_lexer_state,
                strict=strict,
                max_seconds=max_seconds,
                max_memory_mb=max_memory_mb,
            ),
            tok,
        )

    @classmethod
    def from_lark(cls, source: str, tokenizer: Any = None, *, strict: bool = False, **budget: Any) -> "Grammar":
        """Compile a Lark grammar (text). Errors carry line:column. ``strict``: its ``%json``
        schemas in strict mode (as ``from_json_schema``'s). ``max_seconds``, ``max_memory_mb``:
        the compile's budget."""
        return cls._compile("lark", source, tokenizer, strict=strict, **budget)

    @classmethod
    def from_gbnf(cls, source: str, tokenizer: Any = None, **budget: Any) -> "Grammar":
        """Compile a GBNF grammar (llama.cpp's format, text); ``max_seconds``,
        ``max_memory_mb``: the compile's budget."""
        return cls._compile("gbnf", source, tokenizer, **budget)

    @classmethod
    def from_regex(cls, pattern: str, tokenizer: Any = None, **budget: Any) -> "Grammar":
        """Compile a regular expression (the whole output must match it); ``max_seconds``,
        ``max_memory_mb``: the compile's budget."""
        return cls._compile("regex", pattern, tokenizer, **budget)

    @classmethod
    def open(cls, path: Any, tokenizer: Any = None) -> "Grammar":
        """Map and verify an artifact (``.dwa`` or ``.dwa.zst``). With ``tokenizer``, the
        artifact must have been compiled for it (refused by name otherwise), and the
        tokenizer's vocabulary stands in for the artifact's copy of it (not read again: faster
        to open); a ``.dwa.zst`` saved ``without_vocabulary`` needs it."""
        tok = None if tokenizer is None else _tokenizer(tokenizer)
        return cls(_dwac.Grammar.open(str(path), tok), tok)

    def save(self, path: Any, zstd: bool = False, without_vocabulary: bool = False) -> None:
        """Write the artifact (atomically); ``Grammar.open`` reads it back. ``zstd=True`` writes
        the transport form (``.dwa.zst``); ``without_vocabulary=True`` with it leaves the
        tokenizer's vocabulary out (the same in every artifact of a tokenizer, most of a small
        grammar's transport form): the file then opens only with its tokenizer."""
        self._g.save(str(path), zstd, without_vocabulary)

    @property
    def vocab_size(self) -> int:
        """The width of this grammar's masks: the tokenizer's ``vocab_size`` (the model's number
        of logits when one was given, else the tokenizer's number of ids)."""
        return self._g.vocab_size

    @property
    def num_tokens(self) -> int:
        """Number of token ids of the tokenizer the grammar was compiled for (ids from here to
        ``vocab_size`` are padding, never allowed)."""
        return self._g.num_tokens

    @property
    def metadata(self) -> dict:
        """The artifact's metadata: source, options, tokenizer, statistics."""
        return _json.loads(self._g.metadata)

    @property
    def warnings(self) -> list:
        """Warnings of the compile (keywords dropped by ``lenient``, formats not enforced)."""
        return self._g.warnings

    @property
    def undecided_tokens(self) -> Optional[int]:
        """The (lexer state, token) pairs the compiler left UNDECIDED: masks decide them at run
        time by committing the token (``Matcher.counters()`` counts it). 0 for most grammars;
        ``None`` for an artifact without a Parser DWA."""
        return self._g.undecided_tokens

    def matcher(self, max_rollback: Optional[int] = None) -> Matcher:
        """A new ``Matcher`` at the start of this grammar."""
        return _dwac.Matcher(self._g, max_rollback)

    def __repr__(self) -> str:
        return repr(self._g)


class Compiler:
    """Compiles for one tokenizer and keeps what it compiled: asked again for the same source
    and options, it returns the grammar compiled before (a server receiving the same schemas
    or tools again compiles each once). The cache holds at most ``cache_bytes`` of compiled
    tables (least recently used out first; a grammar's tables, not counting the vocabulary,
    which every grammar of the tokenizer shares), keyed by the source's kind and text, the options and the
    tokenizer's fingerprint. Thread-safe: compiles release the GIL, and threads asking for a
    grammar being compiled wait for it instead of compiling it again. Every compile runs within
    ``max_seconds`` and ``max_memory_mb`` (defaults 10 s and 2048 MiB; ``None`` lifts a limit);
    a refusal, past a budget or for a bad source, is remembered like a grammar, so the same
    request fails at once the next time (``cache_info()["refusals"]`` counts such hits).

    ``cache_dir``: an artifact directory shared by the processes of a server and by its CI
    (``dwac compile --cache-dir DIR``): a request's artifact is looked for there under its key
    (``dwac.cache_key``: its kind, its source in a canonical form, the options, the tokenizer's
    fingerprint, the compiler version) before compiling, a hit maps the file instead of
    compiling, and what is compiled is written there atomically. A file there that does not
    open (corrupt, truncated, another tokenizer's) is compiled again and replaced; a directory
    that cannot be written only costs the write (``cache_info()``: ``disk_hits``,
    ``disk_writes``, ``disk_bad_files``, ``disk_write_errors``)."""

    __slots__ = ("_c", "tokenizer")

    def __init__(
        self,
        tokenizer: Any = None,
        cache_bytes: int = 512 << 20,
        *,
        max_seconds: Optional[float] = DEFAULT_MAX_SECONDS,
        max_memory_mb: Optional[int] = DEFAULT_MAX_MEMORY_MB,
        cache_dir: Any = None,
    ):
        self.tokenizer = _tokenizer(tokenizer)
        self._c = _dwac.Compiler(
            self.tokenizer, cache_bytes, max_seconds, max_memory_mb, None if cache_dir is None else str(cache_dir)
        )

    def _compile(self, kind: str, source: str, **options: Any) -> Grammar:
        return Grammar(self._c.compile(kind, source, **options), self.tokenizer)

    def json_schema(
        self,
        schema: Union[str, dict, bool],
        *,
        whitespace: str = "flexible",
        lenient: bool = False,
        draft: Optional[str] = None,
        max_whitespace: Optional[int] = None,
        strict: bool = False,
    ) -> Grammar:
        """As ``Grammar.from_json_schema`` (a ``dict`` is keyed by its JSON text, key order
        included: property order is part of a schema's meaning here)."""
        if whitespace not in ("flexible", "compact"):
            raise DwacError(f"whitespace must be 'flexible' or 'compact', not {whitespace!r}")
        if max_whitespace is not None and whitespace == "compact":
            raise DwacError("max_whitespace bounds flexible whitespace; it cannot go with whitespace='compact'")
        text = schema if isinstance(schema, str) else _json.dumps(schema)
        return self._compile(
            "json_schema",
            text,
            compact=whitespace == "compact",
            lenient=lenient,
            draft=draft,
            max_whitespace=max_whitespace,
            strict=strict,
        )

    def structural_tag(self, tag: Union[str, dict], *, strict: bool = False) -> Grammar:
        """As ``Grammar.from_structural_tag``."""
        return self._compile("structural_tag", tag if isinstance(tag, str) else _json.dumps(tag), strict=strict)

    def tools(self, tools: Union[list, dict, str], format: str, **options: Any) -> Grammar:
        """The grammar of an assistant turn with ``tools`` in ``format``'s wire format (options
        as ``dwac.tools.structural_tag``; ``strict`` as ``structural_tag``'s)."""
        strict = options.pop("strict", False)
        return self._compile("structural_tag", _tools_module.structural_tag_text(tools, format, **options), strict=strict)

    def lark(self, source: str, *, strict: bool = False) -> Grammar:
        return self._compile("lark", source, strict=strict)

    def gbnf(self, source: str) -> Grammar:
        return self._compile("gbnf", source)

    def regex(self, pattern: str) -> Grammar:
        return self._compile("regex", pattern)

    def cache_info(self) -> dict:
        """``entries``, ``bytes``, ``cache_bytes``, ``hits``, ``misses``, ``evictions``,
        ``refusals`` (hits on a remembered refusal), ``max_seconds``, ``max_memory_mb``."""
        return self._c.cache_info()

    def clear(self) -> None:
        """Forget every compiled grammar and remembered refusal (grammars already returned stay
        valid)."""
        self._c.clear()


def check(kind: str, source: Union[str, dict], **options: Any) -> list:
    """Check a source without compiling it (no tokenizer needed): raises ``DwacError`` with the
    message a compile would give about the source itself (a grammar's line:column, a schema's
    unsupported keyword and its JSON pointer), in a small part of a compile's time; returns the
    warnings otherwise (a regex: its syntax). ``kind`` and ``options`` as ``cache_key``'s.
    Releases the GIL."""
    text = source if isinstance(source, str) else _json.dumps(source)
    return _dwac.check_source(kind, text, **options)


def cache_key(kind: str, source: Union[str, dict], tokenizer: Any = None, **options: Any) -> str:
    """The key (hex) a compiled constraint is cached under in an artifact directory
    (``Compiler(cache_dir=…)``, ``dwac compile --cache-dir``): ``kind`` one of
    ``"json_schema"``, ``"lark"``, ``"gbnf"``, ``"structural_tag"``, ``"regex"``; ``source`` its
    text (or a parsed schema or tag); ``options`` as ``Compiler.compile``'s (``compact``,
    ``lenient``, ``draft``, ``max_whitespace``, ``strict``). JSON sources are keyed by their
    text without the spacing between tokens, so re-indenting a schema keeps its key."""
    text = source if isinstance(source, str) else _json.dumps(source)
    return _dwac.cache_key(kind, text, _tokenizer(tokenizer), **options)


def _as_numpy(bitmask):
    """A numpy view of ``bitmask`` sharing its memory (a CPU torch tensor's ``.numpy()``)."""
    if isinstance(bitmask, _np.ndarray):
        return bitmask
    mod = type(bitmask).__module__
    if mod.startswith("torch"):
        if bitmask.device.type != "cpu":
            raise ValueError(f"bitmask must be on the CPU (got {bitmask.device}); copy it to the GPU after filling")
        return bitmask.numpy()
    raise ValueError(f"bitmask must be a numpy array or a torch CPU tensor, got {type(bitmask).__name__}")


def allocate_token_bitmask(batch_size: int, vocab_size: int):
    """A numpy int32 bitmask ``[batch_size, ceil(vocab_size / 32)]`` with every token allowed
    (all bits set). ``vocab_size`` is the model's number of logits (it may exceed the
    tokenizer's: bits past the vocabulary are cleared when a mask is filled)."""
    return _np.full((batch_size, (vocab_size + 31) // 32), -1, dtype=_np.int32)


def allocate_token_bitmask_torch(batch_size: int, vocab_size: int):
    """As ``allocate_token_bitmask``, as a CPU torch tensor (torch must be installed). The tensor
    shares its memory with a numpy array it carries (``bitmask_array``), so dwac's fills into it
    skip the tensor-to-array conversion (about 12 µs a call)."""
    import torch

    array = allocate_token_bitmask(batch_size, vocab_size)
    tensor = torch.from_numpy(array)  # (its storage cannot be resized: the array stays its memory)
    tensor._dwac_array = array
    return tensor


def bitmask_array(bitmask):
    """The numpy array a bitmask of ``allocate_token_bitmask_torch`` shares its memory with;
    any other bitmask as it is."""
    array = getattr(bitmask, "_dwac_array", None)
    return bitmask if array is None else array


def fill_next_token_bitmask(matcher: Matcher, bitmask, index: int = 0) -> None:
    """``matcher.fill_next_token_bitmask(bitmask, index)``."""
    matcher.fill_next_token_bitmask(bitmask, index)


def fill_next_token_bitmask_batch(matchers: Sequence[Matcher], bitmask, indices: Optional[Sequence[int]] = None) -> None:
    """Fill the masks of ``matchers`` into rows ``indices`` (default ``0..n``) of ``bitmask``,
    in parallel with the GIL released."""
    _dwac.fill_next_token_bitmask_batch(list(matchers), bitmask, None if indices is None else list(indices))


def _unpack(bitmask_row, n: int):
    """Booleans ``[n]`` from one row of int32 words (bit ``v % 32`` of word ``v // 32``)."""
    words = _np.ascontiguousarray(bitmask_row, dtype=_np.int32).view(_np.uint8)
    bits = _np.unpackbits(words, axis=-1, bitorder="little")
    if bits.shape[-1] < n:
        pad = _np.zeros(bits.shape[:-1] + (n - bits.shape[-1],), dtype=bits.dtype)
        bits = _np.concatenate([bits, pad], axis=-1)
    return bits[..., :n].astype(bool)


def apply_token_bitmask_inplace(logits, bitmask, indices: Optional[Sequence[int]] = None) -> None:
    """Set the logits of disallowed tokens to ``-inf``, in place. ``logits``: ``[vocab]`` or
    ``[batch, vocab]`` (numpy float, or a torch tensor on any device); ``bitmask`` as filled.
    Logits past the bitmask's width are disallowed. ``indices``: the logits rows to mask
    (default: all, one bitmask row each)."""
    mod = type(logits).__module__
    if mod.startswith("torch"):
        import torch

        mask_np = _as_numpy(bitmask)
        n = logits.shape[-1]
        allowed = torch.from_numpy(_unpack(mask_np.reshape(-1, mask_np.shape[-1]), n)).to(logits.device)
        if logits.dim() == 1:
            logits.masked_fill_(~allowed[0], float("-inf"))
        else:
            rows = range(logits.shape[0]) if indices is None else indices
            for j, r in enumerate(rows):
                logits[r].masked_fill_(~allowed[j if indices is not None else r], float("-inf"))
        return
    if not isinstance(logits, _np.ndarray):
        raise ValueError(f"logits must be a numpy array or a torch tensor, got {type(logits).__name__}")
    # C-contiguous float32 (what llama.cpp hands out): masked natively, about 10x faster.
    if logits.dtype == _np.float32 and _dwac.apply_bitmask_f32(logits, bitmask, None if indices is None else list(indices)):
        return
    bitmask = _as_numpy(bitmask)
    n = logits.shape[-1]
    allowed = _unpack(bitmask.reshape(-1, bitmask.shape[-1]), n)
    if logits.ndim == 1:
        logits[~allowed[0]] = -_np.inf
    else:
        rows = range(logits.shape[0]) if indices is None else indices
        for j, r in enumerate(rows):
            logits[r][~allowed[j if indices is not None else r]] = -_np.inf


def _allow_only(bitmask, row: int, token_ids: Sequence[int]) -> None:
    """Row ``row`` of ``bitmask`` allows exactly ``token_ids`` (those within its width)."""
    words = bitmask[row].view(_np.uint32)
    words[:] = 0
    for t in token_ids:
        if 0 <= t < words.shape[0] * 32:
            words[t // 32] |= _np.uint32(1 << (t % 32))
