# SPDX-License-Identifier: MIT
"""A deterministic Python workload for the malloc replacement's program tests:
dicts, sets, sorting, string building, JSON, regular expressions, big
integers, zlib and objects; prints digests and a few values. Every run prints
the same output whatever the allocator."""
import collections
import hashlib
import json
import random
import re
import zlib


def digest(obj) -> str:
    return hashlib.sha256(repr(obj).encode()).hexdigest()[:16]


rng = random.Random(20261122)

# dicts and sorting
table = {f"key{rng.randrange(10**9)}": [rng.random() for _ in range(rng.randrange(1, 8))]
         for _ in range(30000)}
ordered = sorted(table.items(), key=lambda kv: (len(kv[1]), kv[0]))
print("dict", len(table), digest(ordered[:100]), digest(ordered[-100:]))

# strings and regular expressions
text = " ".join(f"word{rng.randrange(5000)}-{rng.choice('abcdef') * rng.randrange(1, 6)}"
                for _ in range(60000))
counts = collections.Counter(re.findall(r"word(\d+)-([a-f]+)", text))
print("regex", len(counts), counts.most_common(3))

# JSON round trip of nested objects
doc = [{"id": i, "tags": [rng.choice("xyz") * (i % 7) for _ in range(i % 5)],
        "nested": {"v": i * 3.5, "s": str(i) * (i % 11)}} for i in range(20000)]
blob = json.dumps(doc, sort_keys=True)
back = json.loads(blob)
print("json", len(blob), back == doc, hashlib.sha256(blob.encode()).hexdigest()[:16])

# big integers
f = 1
for k in range(1, 3000):
    f *= k
print("bigint", f.bit_length(), f % (2**61 - 1), str(f >> 30000)[:20])

# zlib
raw = blob.encode() * 3
packed = zlib.compress(raw, 6)
print("zlib", len(raw), len(packed), zlib.decompress(packed) == raw)


# objects, a set, list churn
class Node:
    __slots__ = ("key", "children")

    def __init__(self, key):
        self.key = key
        self.children = []


root = Node(0)
frontier = [root]
for i in range(1, 50000):
    n = Node(i)
    frontier[rng.randrange(len(frontier))].children.append(n)
    frontier.append(n)
    if len(frontier) > 5000:
        del frontier[:2500]
seen = set()
stack = [root]
while stack:
    n = stack.pop()
    seen.add(n.key)
    stack.extend(n.children)
print("tree", len(seen), sum(seen) % 1000003)
