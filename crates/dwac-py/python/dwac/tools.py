"""Tool calling: an OpenAI-style ``tools`` list (or a chat request holding one) to the
structural tag of an assistant turn in a model family's own tool-call format.

    tag = dwac.tools.structural_tag(request["tools"], "qwen3", tool_choice="auto")
    grammar = dwac.Grammar.from_structural_tag(tag, tok)
    # or, in one step and cached: dwac.Compiler(tok).tools(request, "qwen3")

Formats (``FORMATS``): ``hermes`` (``qwen``, ``qwen2.5``, ``qwen3``): text, then calls
``<tool_call>\\n{"name": N, "arguments": A}\\n</tool_call>`` separated by newlines, as qwen3's
chat template writes them; ``deepseek`` (``deepseek-r1``, ``deepseek-v3``): text, then
``<｜tool▁calls▁begin｜>`` calls ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>N\\n```json\\nA\\n```<｜tool▁call▁end｜>``
separated by newlines ``<｜tool▁calls▁end｜>``, as DeepSeek-R1's template writes them; ``llama3``:
text (never holding ``{"name": ``), or calls ``{"name": N, "parameters": A}`` separated by
``; ``, as its chat template writes them, after the special token ``<|python_tag|>`` or not; ``smollm2``: text, or ``<tool_call>[`` calls ``{"name": N, "arguments": A}``
separated by ``, `` ``]</tool_call>``.

``tool_choice``: ``"auto"`` (text and calls as the format allows), ``"none"`` (text only, never
the format's call marker), ``"required"`` (one call or more, no text), a function's name or
``{"type": "function", "function": {"name": N}}`` (as required, that function only); default:
the request's, else ``"auto"``. ``parallel_tool_calls=False``: at most one call (default: the
request's, else True). ``reasoning=True``: the turn begins with ``<think>…</think>\\n\\n``.
``max_whitespace``: whitespace in the arguments only around punctuation, at most this many
characters on each side. Each call's arguments are compiled from the tool's ``parameters``
exactly as a JSON Schema is (a tool without ``parameters`` takes ``{}``).
"""

from __future__ import annotations

import json as _json
from typing import Optional, Union

from . import _dwac

FORMATS = ("hermes", "qwen", "qwen2.5", "qwen3", "deepseek", "deepseek-v3", "deepseek-r1", "llama3", "smollm2")


def structural_tag(
    tools: Union[list, dict, str],
    format: str,
    tool_choice: Union[str, dict, None] = None,
    parallel_tool_calls: Optional[bool] = None,
    reasoning: bool = False,
    max_whitespace: Optional[int] = None,
) -> dict:
    """The structural tag (a ``dict``, as ``Grammar.from_structural_tag`` and vLLM's
    ``response_format`` take it) of a turn with ``tools`` (a list, a request ``dict`` with
    ``tools``, or JSON text of either). Raises ``DwacError`` naming the JSON pointer of a bad
    tool."""
    return _json.loads(structural_tag_text(tools, format, tool_choice, parallel_tool_calls, reasoning, max_whitespace))


def structural_tag_text(
    tools: Union[list, dict, str],
    format: str,
    tool_choice: Union[str, dict, None] = None,
    parallel_tool_calls: Optional[bool] = None,
    reasoning: bool = False,
    max_whitespace: Optional[int] = None,
) -> str:
    """``structural_tag`` as JSON text, as the compiler writes it (the text an artifact of
    ``dwac compile --tools`` is keyed by)."""
    text = tools if isinstance(tools, str) else _json.dumps(tools)
    choice = None if tool_choice is None else _json.dumps(tool_choice)
    return _dwac.tools_structural_tag(text, format, choice, parallel_tool_calls, reasoning, max_whitespace)


def structural_tag_from_legacy(key_string: str) -> str:
    """The older structural tag of SGLang and vLLM, ``{"structures": [{"begin", "schema",
    "end"}], "triggers", "at_least_one"?}`` (``type`` optional, a missing ``schema`` any value),
    as the ``{"format"}`` form it means (``triggered_tags``); any other text as it is."""
    try:
        tag = _json.loads(key_string)
    except ValueError:
        return key_string
    if not isinstance(tag, dict) or tag.get("structures") is None:
        return key_string
    unknown = set(tag) - {"type", "structures", "triggers", "at_least_one"}
    if unknown or tag.get("type", "structural_tag") != "structural_tag" or not isinstance(tag["structures"], list):
        return key_string  # (the compiler names what is wrong)
    tags = []
    for s in tag["structures"]:
        if not isinstance(s, dict):
            return key_string
        schema = s.get("schema")
        content = {"type": "json_schema", "json_schema": {} if schema is None else schema}
        tags.append({"type": "tag", "begin": s.get("begin"), "content": content, "end": s.get("end")})
    fmt = {"type": "triggered_tags", "triggers": tag.get("triggers"), "tags": tags}
    if tag.get("at_least_one"):
        fmt["at_least_one"] = True
    return _json.dumps({"type": "structural_tag", "format": fmt})
