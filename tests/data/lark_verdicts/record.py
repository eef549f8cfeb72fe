#!/usr/bin/env python3
"""Record Python Lark's verdicts on the sentences in sentences.json.

Each sentence is parsed with Lark(src, parser="lalr") (contextual lexer, the default)
and Lark(src, parser="earley") (dynamic lexer, the default). A grammar that Lark cannot
build gives "error"; a parse that raises a Lark UnexpectedInput gives false.
Writes verdicts.json next to this script. Regenerate with:
    pip install 'lark==1.3.1'; python3 record.py
"""
import json
import os

import lark
from lark import Lark
from lark.exceptions import UnexpectedInput

HERE = os.path.dirname(os.path.abspath(__file__))


def build(src, parser):
    try:
        return Lark(src, parser=parser)
    except Exception as e:  # grammar construction error
        return e


def verdict(parser, sentence):
    if isinstance(parser, Exception):
        return "error"
    try:
        parser.parse(sentence)
        return True
    except UnexpectedInput:
        return False
    except Exception:
        return "error"


def main():
    with open(os.path.join(HERE, "sentences.json"), encoding="utf-8") as f:
        sentences = json.load(f)
    parsers = {}
    rows = []
    for s in sentences:
        g = s["grammar"]
        if g not in parsers:
            with open(os.path.join(HERE, g), encoding="utf-8") as f:
                src = f.read()
            parsers[g] = (build(src, "lalr"), build(src, "earley"))
        lalr_p, earley_p = parsers[g]
        rows.append({
            "grammar": g,
            "sentence": s["sentence"],
            "lalr": verdict(lalr_p, s["sentence"]),
            "earley": verdict(earley_p, s["sentence"]),
            "dwac": s.get("dwac"),
            "longer_match": bool(s.get("longer_match", False)),
            "why": s.get("why"),
            "lalr_caveat": s.get("lalr_caveat"),
            "readings_differ": s.get("readings_differ"),
            "note": s["note"],
        })
    rows.sort(key=lambda r: (r["grammar"], r["sentence"]))
    out = {
        "lark_version": lark.__version__,
        "generated_by": "record.py",
        "verdicts": rows,
    }
    with open(os.path.join(HERE, "verdicts.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
