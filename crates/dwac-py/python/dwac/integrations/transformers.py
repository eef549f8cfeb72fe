"""A Hugging Face ``transformers`` logits processor:
``model.generate(..., logits_processor=LogitsProcessorList([DwacLogitsProcessor(grammar)]))``.

One matcher per batch row. ``transformers`` calls ``(input_ids, scores) -> scores`` before each
token with the whole sequences so far; the first call marks the prompt's end, each later call
commits every row's last token. Logits past the tokenizer's vocabulary (padded embeddings) are
disallowed. A row that has finished (its end token committed) allows only end tokens, so its
padding steps stay finite."""

from __future__ import annotations

from typing import Optional, Sequence

from .. import (
    Grammar,
    Matcher,
    _allow_only,
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    fill_next_token_bitmask_batch,
)

try:  # (Subclass transformers' base class when it is installed; duck typing otherwise.)
    from transformers import LogitsProcessor as _Base  # type: ignore
except Exception:  # pragma: no cover - transformers is optional
    _Base = object


class DwacLogitsProcessor(_Base):
    """Constrain every row of a ``generate`` batch to ``grammar``. Use a fresh one per
    ``generate`` call. ``eos_token_ids``: the model's end tokens (default: the grammar's
    tokenizer's)."""

    def __init__(self, grammar: Grammar, eos_token_ids: Optional[Sequence[int]] = None):
        self.grammar = grammar
        self.matchers = None
        self.bitmask = None
        self.eos = list(eos_token_ids) if eos_token_ids is not None else (
            grammar.tokenizer.eos_token_ids if grammar.tokenizer is not None else []
        )

    def __call__(self, input_ids, scores):
        batch, n = scores.shape
        if self.matchers is None:
            self.matchers = [Matcher(self.grammar) for _ in range(batch)]
        else:
            for m, t in zip(self.matchers, input_ids[:, -1].tolist()):
                if not m.is_terminated() and not m.accept_token(int(t)):
                    raise ValueError(f"token {int(t)} was sampled outside the grammar's mask")
        if self.bitmask is None or self.bitmask.shape != (batch, (n + 31) // 32):
            self.bitmask = allocate_token_bitmask(batch, n)
        live = [i for i, m in enumerate(self.matchers) if not m.is_terminated()]
        fill_next_token_bitmask_batch([self.matchers[i] for i in live], self.bitmask, live)
        for i, m in enumerate(self.matchers):
            if m.is_terminated():
                _allow_only(self.bitmask, i, [e for e in self.eos if e < n])
        apply_token_bitmask_inplace(scores, self.bitmask)
        return scores
