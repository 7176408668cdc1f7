#!/usr/bin/env python3
"""Lists the options of `uvx` (uv tool run) that consume a value.

Source of truth: uv's clap definitions at a release tag. Run it against a uv
checkout and paste the output into config/launch_tables.go:

    git -C uv show 0.11.1:crates/uv-cli/src/lib.rs > /tmp/lib.rs
    git -C uv show 0.11.1:crates/uv-cli/src/options.rs > /tmp/options.rs
    git -C uv show 0.11.1:crates/uv-cache/src/cli.rs > /tmp/cache.rs
    python3 config/launchgen/uvx_value_args.py /tmp/lib.rs /tmp/options.rs /tmp/cache.rs

It walks UvxArgs and TopLevelArgs (the global options every subcommand
takes), following #[command(flatten)] fields, and prints the long and short
spellings (aliases included) of every field whose type takes a value: not a
plain bool and not a flag action (SetTrue, SetFalse, Count, Help, Version).
Hidden options and aliases are listed too: uv accepts them, so they consume
a value like the visible spellings (the behaviour spec's list, read off
`uvx --help`, has only those).
"""
import re
import sys

src = "\n".join(open(p).read() for p in sys.argv[1:])

structs = {}
for m in re.finditer(r"pub struct (\w+)\s*\{", src):
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        i += 1
    structs[m.group(1)] = src[m.end():i - 1]

FLAG_ACTIONS = ("SetTrue", "SetFalse", "Count", "Help", "HelpShort", "HelpLong", "Version")


def fields(body):
    """Yields (attributes, name, type) for each field of a struct body."""
    attrs = []
    buf = ""
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("///") or s.startswith("//"):
            continue
        if buf or s.startswith("#["):
            buf += " " + s
            if buf.count("[") == buf.count("]"):
                attrs.append(buf.strip())
                buf = ""
            continue
        m = re.match(r"(?:pub(?:\(crate\))?\s+)?(\w+)\s*:\s*(.+?),?$", s)
        if m:
            yield attrs, m.group(1), m.group(2)
            attrs = []


out = set()


def walk(name, seen=()):
    if name not in structs or name in seen:
        return
    for attrs, field, typ in fields(structs[name]):
        text = " ".join(attrs)
        if "flatten" in text:
            walk(re.sub(r"^Box<(.+)>$", r"\1", typ), seen + (name,))
            continue
        arg = [a for a in attrs if a.startswith("#[arg(")]
        if not arg:
            continue
        a = arg[0]
        if any(act in a for act in FLAG_ACTIONS) or typ == "bool":
            continue
        names = []
        if re.search(r"\blong\b(?!\s*=)", a):
            names.append("--" + field.replace("_", "-"))
        for m in re.finditer(r'\blong\s*=\s*"([^"]+)"', a):
            names.append("--" + m.group(1))
        if re.search(r"\bshort\b(?!\s*=)", a):
            names.append("-" + field[0])
        for m in re.finditer(r"\bshort\s*=\s*'(.)'", a):
            names.append("-" + m.group(1))
        for m in re.finditer(r'\b(?:visible_)?alias\s*=\s*"([^"]+)"', a):
            names.append("--" + m.group(1))
        for m in re.finditer(r"\b(?:visible_)?short_alias\s*=\s*'(.)'", a):
            names.append("-" + m.group(1))
        out.update(names)


walk("UvxArgs")
walk("TopLevelArgs")
for n in sorted(out):
    print(n)
