#!/usr/bin/env python3
"""Lists functions in src/ longer than a limit (default 80 lines), body braces included.

A function is a line at column 0 (or a class member at column 2) that ends with '{' and is not a
namespace, class, struct, enum or initializer, up to the matching '}' at the same indentation.
A function may be longer when the line just above its signature (or its docstring) says why:
`// long: <reason>`.
  scripts/long-functions.py [--limit N] [--check]   (--check: exit 1 when an unexplained one exists)
"""
import pathlib, re, sys

limit = 80
check = "--check" in sys.argv
if "--limit" in sys.argv:
    limit = int(sys.argv[sys.argv.index("--limit") + 1])
root = pathlib.Path(__file__).resolve().parent.parent / "src"
skip = re.compile(r"^\s*(namespace|class|struct|enum|union|extern|#|//|return|static_assert|using)\b|=\s*\{$|^\s*\}")
found = []
for path in sorted(root.rglob("*.cpp")) + sorted(root.rglob("*.h")):
    lines = path.read_text(errors="replace").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^( {0,2})\S", line)
        if m and line.rstrip().endswith("{") and not skip.match(line) and "(" in "".join(lines[max(0, i - 3):i + 1]):
            indent = m.group(1)
            start = i
            # the signature may span lines above: walk back to its first line
            while start > 0 and lines[start - 1].strip() and not lines[start - 1].rstrip().endswith((";", "}", "{")) \
                    and not lines[start - 1].lstrip().startswith(("//", "#")):
                start -= 1
            j = i + 1
            while j < len(lines) and lines[j] != indent + "}" and lines[j] != indent + "};":
                j += 1
            n = j - start + 1
            if n > limit:
                above = "\n".join(lines[max(0, start - 12):start])
                reason = re.search(r"//\s*long:\s*(.+)", above)
                found.append((n, f"{path.relative_to(root.parent)}:{start + 1}", lines[start].strip()[:90],
                              reason.group(1).strip() if reason else None))
            i = j + 1
            continue
        i += 1
unexplained = [f for f in found if f[3] is None]
for n, where, sig, reason in sorted(found, reverse=True):
    print(f"{n:4d} lines  {where}  {sig}" + (f"  [long: {reason}]" if reason else "  [NO REASON]"))
print(f"{len(found)} functions over {limit} lines, {len(unexplained)} without a stated reason")
sys.exit(1 if check and unexplained else 0)
