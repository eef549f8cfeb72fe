"""Valid texts for the llama.cpp grammars of ../shared/data/grammars/llama.cpp (the GBNF bench
workload and tests/gbnf.rs). Deterministic (fixed seed). Run from the repository root:

    python3 tests/data/gbnf/make_texts.py

Writes tests/data/gbnf/llama.cpp/<grammar>.jsonl and tests/data/gbnf/own/csv.jsonl, lines
{"text": ..., "valid": true}. Then, with XGrammar (an implementation other than dwac) as the
judge:

    target/peers/xgrammar-venv/bin/python tests/data/gbnf/make_texts.py --check

which fails naming every text XGrammar rejects. dwac's tests (`tests/lexer_inference.rs`)
accept every text with and without lexer inference.
"""
import glob
import json
import os
import random
import re
import sys

def check():
    import xgrammar as xgr
    bad = 0
    for texts in sorted(glob.glob("tests/data/gbnf/llama.cpp/*.jsonl")) + ["tests/data/gbnf/own/csv.jsonl"]:
        name = os.path.basename(texts)[:-6]
        gpath = (f"../shared/data/grammars/llama.cpp/{name}.gbnf" if "llama.cpp" in texts
                 else texts[:-6] + ".gbnf")
        # (XGrammar refuses an empty first alternative, `ws ::= | " "`: written `""` for it.)
        text = re.sub(r"::=(\s*)\|", r'::=\1"" |', open(gpath, encoding="utf-8").read())
        g = xgr.Grammar.from_ebnf(text)
        for i, line in enumerate(open(texts, encoding="utf-8")):
            t = json.loads(line)["text"]
            if not xgr.testing._is_grammar_accept_string(g, t):
                bad += 1
                print(f"{texts}:{i + 1}: XGrammar rejects {t[:80]!r}")
    print("rejected:", bad)
    sys.exit(1 if bad else 0)


if sys.argv[1:] == ["--check"]:
    check()

random.seed(20261127)
OUT = "tests/data/gbnf/llama.cpp"
os.makedirs(OUT, exist_ok=True)

WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxes of "
         "frozen milk and every morning new ideas arrive from distant places").split()
IDENTS = ["x", "y", "total", "count_2", "a1", "rate", "n", "sum_of_all", "tmp", "value9"]


def write(name, texts):
    with open(f"{OUT}/{name}.jsonl", "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t, "valid": True}, ensure_ascii=False) + "\n")


def arith_term(d=0):
    r = random.random()
    if d < 2 and r < 0.25:
        return "(" + random.choice(["", " "]) + arith_expr(d + 1) + ")" + random.choice(["", " "])
    if r < 0.6:
        return random.choice(IDENTS) + random.choice(["", " "])
    return str(random.randint(0, 99999)) + random.choice(["", " "])


def arith_expr(d=0):
    s = arith_term(d)
    for _ in range(random.randint(0, 3)):
        s += random.choice("-+*/") + random.choice(["", " "]) * 0 + arith_term(d)
    return s


def arithmetic():
    out = []
    for _ in range(24):
        lines = [arith_expr() + "=" + random.choice(["", " "]) + arith_term().rstrip(" ") + "\n"
                 for _ in range(random.randint(1, 4))]
        out.append("".join(lines))
    return out


def c_expr(d=0):
    # (c.gbnf: `parenExpression ::= "(" ws expression ws ")"`, `ws ::= [ \t\n]+`: spaces required.)
    r = random.random()
    if d < 2 and r < 0.2:
        return "(" + " " * random.randint(1, 2) + c_expr(d + 1) + " " * random.randint(1, 2) + ")"
    if r < 0.35:
        return random.choice(IDENTS)
    if r < 0.45 and d < 2:
        return "-" + c_expr(d + 1)
    if r < 0.55 and d < 2:
        return random.choice(IDENTS) + "(" + c_expr(d + 1) + ")"
    s = str(random.randint(0, 999))
    if d < 2 and random.random() < 0.5:
        s += random.choice("+-*/") + c_expr(d + 1)
    return s


def c_statement(d=0):
    r = random.random()
    v = random.choice(IDENTS)
    if r < 0.3:
        return f"{random.choice(['int', 'float', 'char'])} {v} = {c_expr()};"
    if r < 0.5:
        return f"{v} = {c_expr()};"
    if r < 0.6:
        return f"return {c_expr()};"
    if r < 0.7 and d < 1:
        body = "".join(c_statement(d + 1) for _ in range(random.randint(0, 2)))
        return f"while({c_expr()}<{c_expr()}){{{body}}}"
    if r < 0.8 and d < 1:
        body = "".join(c_statement(d + 1) for _ in range(random.randint(1, 2)))
        return f"if({c_expr()}=={c_expr()}){{{body}}}else{{{c_statement(d + 1)}}}"
    if r < 0.9:
        # (A call statement: `identifier ws "(" argList? ")" ";"`, a space before the parenthesis.)
        return f"{v} ({c_expr()});"
    return "// " + " ".join(random.sample(WORDS, 4)) + "\n"


def c():
    out = []
    for _ in range(20):
        decls = []
        for _ in range(random.randint(1, 2)):
            body = "".join(c_statement() for _ in range(random.randint(1, 4)))
            param = random.choice(["", "int a", "float x"])
            decls.append(f"{random.choice(['int', 'float', 'char'])} {random.choice(IDENTS)}({param}){{{body}}}")
        out.append("".join(decls))
    return out


def chess_move():
    r = random.random()
    f, rk = random.choice("abcdefgh"), random.choice("12345678")
    if r < 0.4:
        return f + rk + random.choice(["", "", "+"])
    if r < 0.5:
        return random.choice("abcdefgh") + "x" + f + rk
    if r < 0.9:
        return random.choice("NBKQR") + random.choice(["", "x"]) + f + rk + random.choice(["", "+", "#"])
    return random.choice(["O-O", "O-O-O"])


def chess():
    out = []
    for _ in range(20):
        n = random.randint(2, 12)
        s = f"1. {chess_move()} {chess_move()}\n"
        for i in range(2, n + 1):
            s += f"{i}. {chess_move()} {chess_move()}\n"
        out.append(s)
    return out


def english():
    out = []
    for _ in range(20):
        words = [random.choice(WORDS) for _ in range(random.randint(5, 40))]
        words[0] = words[0].capitalize()
        s = ""
        for i, w in enumerate(words):
            if i:
                s += random.choice([" ", " ", " ", "\n"])
            s += w + (random.choice([",", ".", ";", "!", ""]) if random.random() < 0.15 else "")
        out.append(s + ".")
    return out


def japanese():
    pieces = ["こんにちは", "世界", "ありがとう", "カタカナ", "日本語", "東京", "テスト", "です。", "、", "漢字"]
    return [" ".join(random.choice(pieces) + random.choice(pieces) for _ in range(random.randint(1, 8)))
            for _ in range(20)]


def listing():
    return ["".join("- " + " ".join(random.choice(WORDS) for _ in range(random.randint(1, 8))) + "\n"
                    for _ in range(random.randint(1, 6))) for _ in range(20)]


def json_docs():
    """MaskBench instances as json.dumps writes them, where json.gbnf's number rules allow them
    (integers of at most 16 digits, exponents [1-9]-led): checked later, not guessed here."""
    docs = []
    for f in sorted(glob.glob("../shared/data/jsonschemabench/maskbench/data/*.json"))[::60]:
        d = json.load(open(f, encoding="utf-8"))
        for t in d.get("tests", []):
            if t.get("valid") and isinstance(t["data"], (dict, list)):
                docs.append(t["data"])
    return docs




docs = json_docs()
objects = [json.dumps(d) for d in docs if isinstance(d, dict)][:40]
write("arithmetic", arithmetic())
write("c", c())
write("chess", chess())
write("english", english())
write("japanese", japanese())
write("list", listing())
write("json", objects)
write("json_arr", ["[\n" + ",\n".join(json.dumps(x) for x in random.sample(docs, random.randint(1, 4))) + "]"
                   for _ in range(30)])
print("wrote", sorted(os.listdir(OUT)))


def csv_rows():
    names = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov",
             "Donald Knuth", "Frances Allen", "Ken Thompson", "Margaret Hamilton", "John McCarthy"]
    cities = ["London", "Paris", "New York", "Zürich", "Tokyo", "São Paulo", "Lagos", "Sydney"]
    out = []
    for _ in range(20):
        s = "name,email,age,city\n"
        for _ in range(random.randint(1, 12)):
            n = random.choice(names)
            field = f'"{n}, Jr."' if random.random() < 0.2 else n
            user = n.lower().replace(" ", ".")
            s += f"{field},{user}@{random.choice(['example', 'mail', 'uni-x'])}.{random.choice(['com', 'org', 'co.uk'])}," \
                 f"{random.randint(0, 120)},{random.choice(cities)}\n"
        out.append(s)
    return out


os.makedirs("tests/data/gbnf/own", exist_ok=True)
with open("tests/data/gbnf/own/csv.jsonl", "w", encoding="utf-8") as f:
    for t in csv_rows():
        f.write(json.dumps({"text": t, "valid": True}, ensure_ascii=False) + "\n")
