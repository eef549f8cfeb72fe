"""Type stubs of the native module `dwac._dwac` (PyO3)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__version__: str

class DwacError(ValueError):
    """A bad grammar or schema (with its location), a corrupt or mismatched artifact, a refused
    token, a bad buffer."""

class Tokenizer:
    """``vocab_size``: the model's number of logits, when it exceeds the tokenizer's ids
    (padded embeddings). Masks are that wide; the padding ids are never allowed."""
    @staticmethod
    def from_file(path: Union[str, PathLike], vocab_size: Optional[int] = None) -> Tokenizer: ...
    @staticmethod
    def from_gguf(path: Union[str, PathLike], vocab_size: Optional[int] = None) -> Tokenizer: ...
    @staticmethod
    def from_json(
        json: str, name: str = "tokenizer", eos: Optional[List[int]] = None, vocab_size: Optional[int] = None
    ) -> Tokenizer: ...
    @staticmethod
    def default(vocab_size: Optional[int] = None) -> Tokenizer: ...
    def with_vocab_size(self, vocab_size: int) -> Tokenizer:
        """The same vocabulary (same fingerprint) with masks ``vocab_size`` wide."""
    @property
    def name(self) -> str: ...
    @property
    def vocab_size(self) -> int:
        """Mask width: the ``vocab_size`` given, else ``num_tokens``."""
    @property
    def num_tokens(self) -> int:
        """The tokenizer's own number of token ids."""
    @property
    def eos_token_ids(self) -> List[int]: ...
    @property
    def fingerprint(self) -> str: ...
    def encode(self, text: str) -> List[int]: ...
    def token_bytes(self, id: int) -> bytes: ...

class Grammar:
    @staticmethod
    def compile(
        kind: str,
        source: str,
        tokenizer: Tokenizer,
        compact: bool = False,
        lenient: bool = False,
        draft: Optional[str] = None,
        _mask_work_per_lexer_state: Optional[int] = None,
        max_whitespace: Optional[int] = None,
        strict: bool = False,
        max_seconds: Optional[float] = 10.0,
        max_memory_mb: Optional[int] = 2048,
    ) -> Grammar:
        """``_mask_work_per_lexer_state``: diagnostic/test option, the compiler's work budget per
        lexer state; lexer states over it leave all their tokens UNDECIDED (slow masks)."""
    @staticmethod
    def open(path: Union[str, PathLike], tokenizer: Optional[Tokenizer] = None) -> Grammar: ...
    def save(self, path: Union[str, PathLike], zstd: bool = False, without_vocabulary: bool = False) -> None: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def num_tokens(self) -> int: ...
    @property
    def metadata(self) -> str: ...
    @property
    def warnings(self) -> List[str]: ...
    @property
    def undecided_tokens(self) -> Optional[int]:
        """(lexer state, token) pairs the compiler left UNDECIDED (decided at run time by
        committing the token); None without a Parser DWA."""

class Matcher:
    def __init__(self, grammar: Any, max_rollback: Optional[int] = None) -> None: ...
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        """Row `index` of an int32 `[batch, words]` numpy array or CPU torch tensor, in place."""
    def counters(self) -> Dict[str, int]:
        """The last fill's ``undecided``, ``fallbacks``, ``reads``; over the matcher's life
        ``masks``, ``undecided_total``, ``fallbacks_total``, ``masks_with_undecided`` (every fill
        path, the batch fill included; ``reset`` keeps them, ``fork`` starts from zero)."""
    def accept_token(self, token: int) -> bool:
        """False (and no change) if the grammar refuses the token."""
    def commit(self, token: int) -> None:
        """As accept_token, raising DwacError with the reason."""
    def accept_tokens(self, tokens: Sequence[int]) -> int:
        """Tokens committed before the first refused one."""
    def accept_bytes(self, data: bytes) -> None: ...
    def validate_tokens(self, tokens: Sequence[int]) -> int:
        """Longest acceptable prefix of a draft; the matcher is unchanged."""
    def rollback(self, n: int = 1) -> None: ...
    def reset(self) -> None: ...
    def fork(self) -> Matcher: ...
    def is_terminated(self) -> bool:
        """An end token was committed: nothing more is allowed."""
    def is_accepting(self) -> bool:
        """The output may end here (an end token is allowed)."""
    def forced_tokens(self, limit: int = 64) -> List[int]: ...
    def forced_bytes(self, limit: int = 256) -> bytes: ...
    def allowed_tokens(self) -> List[int]: ...

def apply_bitmask_f32(logits: Any, bitmask: Any, indices: Optional[Sequence[int]] = None) -> bool:
    """-inf where the bitmask disallows, for C-contiguous float32 numpy logits; False if not such."""
def _time_trace(matcher: Matcher, tokens: Sequence[int]) -> Tuple[List[int], List[int]]:
    """Benchmark hook: per step (fill ns, commit ns), timed inside Rust; stops after a refused
    token. The fills count in the matcher's ``counters()``."""
def fill_next_token_bitmask_batch(matchers: Sequence[Matcher], bitmask: Any, indices: Optional[Sequence[int]] = None) -> None: ...

class Compiler:
    """Compiles for one tokenizer and caches the grammars (see ``dwac.Compiler``)."""
    def __init__(
        self,
        tokenizer: Tokenizer,
        cache_bytes: int = ...,
        max_seconds: Optional[float] = 10.0,
        max_memory_mb: Optional[int] = 2048,
        cache_dir: Optional[str] = None,
    ) -> None: ...
    def compile(
        self,
        kind: str,
        source: str,
        compact: bool = False,
        lenient: bool = False,
        draft: Optional[str] = None,
        max_whitespace: Optional[int] = None,
        strict: bool = False,
    ) -> Grammar: ...
    def cache_info(self) -> Dict[str, Any]: ...
    def clear(self) -> None: ...

def tools_structural_tag(
    tools: str,
    format: str,
    tool_choice: Optional[str] = None,
    parallel_tool_calls: Optional[bool] = None,
    reasoning: bool = False,
    max_whitespace: Optional[int] = None,
) -> str:
    """The structural tag (JSON text) of a turn with ``tools`` (JSON text); see ``dwac.tools``."""

def check_source(
    kind: str,
    source: str,
    compact: bool = False,
    lenient: bool = False,
    draft: Optional[str] = None,
    max_whitespace: Optional[int] = None,
    strict: bool = False,
) -> List[str]:
    """The front end alone: raises DwacError as a compile would about the source itself (a
    regex: its syntax); the warnings otherwise."""
def cache_key(
    kind: str,
    source: str,
    tokenizer: Tokenizer,
    compact: bool = False,
    lenient: bool = False,
    draft: Optional[str] = None,
    max_whitespace: Optional[int] = None,
    strict: bool = False,
) -> str: ...
