"""Instances for `oneOf`s whose branches overlap and other `not`s (compiled with complements),
judged by the `jsonschema` package (an independent validator):
`tests/json_schema.rs::complements_overlapping_one_of_and_other_nots` checks that dwac's grammar
accepts exactly the valid ones.

    target/e2e/venv/bin/python tests/data/complements/generate.py

reads `schemas.json` (MaskBench schemas copied from ../shared/data, with their valid instances as
`seeds` to mutate and, for some, hand-picked `cases` taken as they are; and hand-written ones) and writes `instances.jsonl`. Deterministic (seeded)."""

import json
import random
from pathlib import Path

import jsonschema

HERE = Path(__file__).parent
PER_SCHEMA = 120


def names_in(schema, out):
    """Every property name the schema mentions (properties, required), anywhere."""
    if isinstance(schema, dict):
        for k in schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}:
            if k not in out:
                out.append(k)
        for k in schema.get("required", []) if isinstance(schema.get("required"), list) else []:
            if k not in out:
                out.append(k)
        for v in schema.values():
            names_in(v, out)
    elif isinstance(schema, list):
        for v in schema:
            names_in(v, out)
    return out


def strings_in(schema, out):
    """String constants the schema mentions (enum, const), for values that hit its branches."""
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("enum", "const"):
                for x in v if k == "enum" and isinstance(v, list) else [v]:
                    if isinstance(x, str) and x not in out:
                        out.append(x)
            else:
                strings_in(v, out)
    elif isinstance(schema, list):
        for v in schema:
            strings_in(v, out)
    return out


def value(rng, names, strings, depth):
    r = rng.random()
    if depth < 2 and r < 0.35:
        return obj(rng, names, strings, depth + 1)
    pool = [0, 7, -3, 2.5, 1e3, 3, 5, 10, 20, 4.5, -0.5, 19.99, True, False, None, "", "xy", "hello", "4/7", "0x1.6a09e667f3bcdp+0", [], [1, "a"], ["a", "b"], ["x"], [1, 2, 3], ["a", "b", "c", "d"]]
    pool += strings
    return rng.choice(pool)


def obj(rng, names, strings, depth):
    keys = [k for k in names if rng.random() < 0.45]
    if rng.random() < 0.15:
        keys.append("extra")
    rng.shuffle(keys)
    return {k: value(rng, names, strings, depth) for k in keys}


def mutate(rng, data, names, strings):
    """A copy of `data` with one object inside it changed: a key added, dropped or given a new value."""
    data = json.loads(json.dumps(data))
    objects = []

    def walk(v):
        if isinstance(v, dict):
            objects.append(v)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(data)
    if not objects:
        return data
    for _ in range(rng.choice([1, 1, 2, 3])):
        o = rng.choice(objects)
        r = rng.random()
        if r < 0.4 or not o:
            o[rng.choice(names + ["extra"])] = value(rng, names, strings, 1)
        elif r < 0.7:
            del o[rng.choice(list(o))]
        else:
            o[rng.choice(list(o))] = value(rng, names, strings, 1)
    return data


def main():
    schemas = json.loads((HERE / "schemas.json").read_text())
    rng = random.Random(20261127)
    lines = []
    for entry in schemas:
        s = entry["schema"]
        validator = jsonschema.validators.validator_for(s)(s)
        names, strings = names_in(s, []), strings_in(s, [])
        seen = set()
        # (Hand-picked values, judged like the rest: those an entry lists under `cases`.)
        for data in entry.get("cases", []):
            key = json.dumps(data, sort_keys=True)
            if key not in seen:
                seen.add(key)
                lines.append({"schema": entry["name"], "data": data, "valid": validator.is_valid(data)})
        for _ in range(PER_SCHEMA * 4):
            seeds = entry.get("seeds", [])
            if seeds and rng.random() < 0.7:
                data = mutate(rng, rng.choice(seeds), names, strings)
            elif rng.random() < 0.85:
                data = obj(rng, names, strings, 0)
            else:
                data = value(rng, names, strings, 3)
            key = json.dumps(data, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            lines.append({"schema": entry["name"], "data": data, "valid": validator.is_valid(data)})
            if len(seen) == PER_SCHEMA + len(entry.get("cases", [])):
                break
    with open(HERE / "instances.jsonl", "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    valid = sum(x["valid"] for x in lines)
    print(f"{len(lines)} instances over {len(schemas)} schemas, {valid} valid")


main()
