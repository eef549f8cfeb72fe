"""GBNF made by llama.cpp's own JSON-Schema converter (llama-cpp-python's
`llama_cpp.llama_grammar.json_schema_to_gbnf`) for MaskBench schemas, with their valid
instances laid out as the grammar allows: the GBNF bench workload (`cargo xtask bench`) and
tests/gbnf.rs. Two steps, each in the venv that has the package it needs:

    target/e2e/venv/bin/python tests/data/gbnf/make_converted.py convert   # llama-cpp-python
    target/peers/xgrammar-venv/bin/python tests/data/gbnf/make_converted.py judge   # XGrammar

`convert` writes tests/data/gbnf/converted/<schema>.gbnf and candidate texts (each valid
instance as json.dumps writes it, keys in the order the converter's grammar expects: required
properties first, then the others, each group in schema order; and as written);
`judge` keeps, per instance, the first candidate XGrammar accepts (an implementation other than
dwac) and writes <schema>.jsonl; a grammar XGrammar refuses keeps no texts. Run from the
repository root; deterministic.
"""
import glob
import json
import os
import sys

OUT = "tests/data/gbnf/converted"
SRC = "../shared/data/jsonschemabench/maskbench/data"


def reorder(v, schema):
    """Keys as the converter orders them: required first, then the rest, schema order within."""
    if isinstance(v, list):
        items = schema.get("items") if isinstance(schema, dict) else None
        return [reorder(x, items if isinstance(items, dict) else {}) for x in v]
    if not isinstance(v, dict) or not isinstance(schema, dict):
        return v
    props = schema.get("properties") or {}
    req = [k for k in props if k in (schema.get("required") or [])]
    opt = [k for k in props if k not in req]
    order = req + opt + [k for k in v if k not in props]
    return {k: reorder(v[k], props.get(k, {})) for k in order if k in v}


def convert():
    from llama_cpp.llama_grammar import json_schema_to_gbnf
    os.makedirs(OUT, exist_ok=True)
    files = sorted(glob.glob(f"{SRC}/*.json"))
    made = 0
    for f in files[::37]:
        d = json.load(open(f, encoding="utf-8"))
        name = os.path.basename(f)[:-5]
        try:
            gbnf = json_schema_to_gbnf(json.dumps(d["schema"]))
        except Exception as e:  # the converter refuses some schemas
            print(f"skip {name}: {type(e).__name__}: {str(e)[:80]}")
            continue
        valid = [t["data"] for t in d.get("tests", []) if t.get("valid")]
        if not valid:
            continue
        with open(f"{OUT}/{name}.gbnf", "w", encoding="utf-8") as g:
            g.write(gbnf)
        with open(f"{OUT}/{name}.candidates.json", "w", encoding="utf-8") as c:
            json.dump([[json.dumps(reorder(v, d["schema"])), json.dumps(v)] for v in valid], c)
        made += 1
    print("converted", made)


def judge():
    import xgrammar as xgr
    kept = 0
    for path in sorted(glob.glob(f"{OUT}/*.gbnf")):
        base = path[:-5]
        cands = json.load(open(base + ".candidates.json", encoding="utf-8"))
        try:
            g = xgr.Grammar.from_ebnf(open(path, encoding="utf-8").read())
        except Exception as e:
            # (Kept without texts: a compile-only job; dwac may compile what XGrammar refuses.)
            print(f"xgrammar refuses {path}: {str(e)[:100]}")
            os.remove(base + ".candidates.json")
            continue
        texts = []
        for alts in cands:
            for t in alts:
                if xgr.testing._is_grammar_accept_string(g, t):
                    texts.append(t)
                    break
        os.remove(base + ".candidates.json")
        if not texts:
            os.remove(path)
            continue
        with open(base + ".jsonl", "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t, "valid": True}) + "\n")
        kept += 1
    print("kept", kept)


{"convert": convert, "judge": judge}[sys.argv[1]]()
