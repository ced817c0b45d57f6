#!/usr/bin/env python3
"""The layering rules of ARCHITECTURE.md, measured from the imports of src/.

Checks two things and prints the floors:
- no two modules of one folder import each other (directly or through their children);
- the top-level rooms form no circle, so each stands on a floor: one above the highest room it
  imports (a room that imports none stands on floor 1).

An import is any `crate::…`, `super::…` or `self::…` path outside comments; a name imported from
a module that only re-exports it counts as an import of the child that defines it. Test modules
(`tests.rs`, `tests/`, inline `mod tests`) are left out: a test may reach whatever it tests.

Usage: .ci/layering.py [--floors]   (exit 1 on a circle)
"""
import collections
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def modules():
    found = {}
    for directory, _, files in os.walk(ROOT):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            if "tests" in rel or rel[:1] == ["cli"] or rel == ["cli"]:
                continue  # tests reach anything; cli/ and main.rs are the binary, not the library
            found[tuple(rel)] = path
    return found


def source(path):
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]\nmod tests {")
    if cut >= 0:
        text = text[:cut]
    return "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))


def edges(mods):
    defined = collections.defaultdict(set)
    item = r"^\s*pub(?:\([a-z]+\))?\s+(?:async\s+)?(?:struct|enum|fn|trait|type|const|static|mod)\s+(\w+)"
    for module, path in mods.items():
        for name in re.findall(item, open(path, encoding="utf-8").read(), re.M):
            defined[name].add(module)

    def resolve(module, segments):
        if segments[0] == "crate":
            base, segments = [], segments[1:]
        else:
            base = list(module)
            if segments[0] == "self":
                segments = segments[1:]
            while segments and segments[0] == "super":
                base, segments = base[:-1], segments[1:]
        full = base + segments
        for i in range(len(full), 0, -1):
            if tuple(full[:i]) in mods:
                target, rest = tuple(full[:i]), full[i:]
                if rest:
                    children = [d for d in defined.get(rest[0], ()) if d[: len(target)] == target and d != target]
                    if len(children) == 1:
                        target = children[0]
                return target
        return None

    graph = collections.defaultdict(set)
    for module, path in mods.items():
        text = source(path)
        paths = [p.split("::") for p in re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text)]
        for prefix, group in re.findall(r"\buse\s+((?:crate|super|self)(?:::\w+)*)::\{([^;]*)\}", text):
            paths += [prefix.split("::") + [name] for name in re.findall(r"\w+", group)]
        for segments in paths:
            target = resolve(module, segments)
            if target and target != module:
                graph[module].add(target)
    return graph


def under(a, b):
    return a[: len(b)] == b


def main():
    mods = modules()
    graph = edges(mods)
    reaches = {m: {t for x in mods if under(x, m) for t in graph[x]} for m in mods}
    circles = sorted(
        ("/".join(a), "/".join(b))
        for a in mods
        for b in mods
        if a and b and a < b and a[:-1] == b[:-1]
        and any(under(t, b) for t in reaches[a])
        and any(under(t, a) for t in reaches[b])
    )
    for a, b in circles:
        print(f"circle: {a} and {b} import each other")
    rooms = sorted({m[0] for m in mods if m})
    uses = {r: {t[0] for m in mods if m[:1] == (r,) for t in graph[m] if t and t[0] != r} for r in rooms}
    floors, pending = {}, set(rooms)
    while pending:
        ready = [r for r in pending if uses[r] <= set(floors)]
        if not ready:
            print("circle among rooms: " + ", ".join(sorted(pending)))
            return 1
        for r in ready:
            floors[r] = 1 + max((floors[u] for u in uses[r]), default=0)
            pending.discard(r)
    if "--floors" in sys.argv:
        for floor in sorted(set(floors.values()), reverse=True):
            names = sorted(r for r in rooms if floors[r] == floor)
            print(f"floor {floor}: " + ", ".join(names))
            for r in names:
                print(f"    {r} imports: " + (", ".join(sorted(uses[r])) or "-"))
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
