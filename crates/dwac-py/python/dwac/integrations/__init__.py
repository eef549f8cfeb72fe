"""Drop-in logits processors: ``dwac.integrations.transformers`` and
``dwac.integrations.llama_cpp``."""
