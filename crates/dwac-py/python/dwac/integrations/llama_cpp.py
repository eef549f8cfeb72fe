"""A llama-cpp-python logits processor: ``Llama(...)(prompt, logits_processor=LogitsProcessorList([
DwacLogitsProcessor(grammar)]))``, or ``create_completion(..., logits_processor=...)``.

llama-cpp-python calls it as ``(input_ids, scores) -> scores`` before each sampled token, with
every token so far (prompt included) and the float32 logits of the next one. The first call
marks where the prompt ends; each later call commits the tokens generated since."""

from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np

from .. import Grammar, Matcher, _allow_only, allocate_token_bitmask, apply_token_bitmask_inplace


class DwacLogitsProcessor:
    """Constrain one llama-cpp-python generation to ``grammar``. Use a fresh one (or call
    ``reset``) per generation. ``eos_token_ids``: the model's end tokens, allowed once the
    output is complete (default: those of the grammar's tokenizer)."""

    def __init__(self, grammar: Grammar, eos_token_ids: Optional[Sequence[int]] = None):
        self.grammar = grammar
        self.matcher = Matcher(grammar)
        self.prompt_len: Optional[int] = None
        self.committed = 0
        self.bitmask = None
        self.eos = list(eos_token_ids) if eos_token_ids is not None else (
            grammar.tokenizer.eos_token_ids if grammar.tokenizer is not None else []
        )
        # Time spent in dwac (mask + commit) and calls made, for overhead reports (the matcher's
        # ``counters()`` tell what its masks did).
        self.seconds = 0.0
        self.calls = 0

    def reset(self) -> None:
        """Start a new generation."""
        self.matcher.reset()
        self.prompt_len = None
        self.committed = 0

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        t0 = time.perf_counter()
        if self.prompt_len is None:
            self.prompt_len = len(input_ids)
        for t in input_ids[self.prompt_len + self.committed :]:
            if not self.matcher.accept_token(int(t)):
                raise ValueError(f"token {int(t)} was sampled outside the grammar's mask")
            self.committed += 1
        n = scores.shape[-1]
        if self.bitmask is None or self.bitmask.shape[1] * 32 < n:
            self.bitmask = allocate_token_bitmask(1, n)
        if self.matcher.is_terminated():
            _allow_only(self.bitmask, 0, [e for e in self.eos if e < n])
        else:
            self.matcher.fill_next_token_bitmask(self.bitmask)
        apply_token_bitmask_inplace(scores, self.bitmask)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return scores
