#!/usr/bin/env python3
"""Lists functions in src/ longer than a limit (default 80 lines), measured by a parser.

Universal Ctags (`--fields=+ne`: each definition's line and its `end:` line) finds every function
and member function definition, however its signature is wrapped or indented: free functions,
member functions defined in a class body, lambdas held in variables, functions in headers. A
function's length runs from the first line of its signature (the return type and template lines
just above the name's line count) to its closing brace. A lambda inside a function is part of that
function and is not listed on its own.

A function may be longer when its reason is stated in ALLOWED below (qualified name: reason), or
in a `// long: <reason>` comment within the 12 lines above its signature.

  scripts/long-functions.py [--limit N] [--check] [--root DIR]
      --check      exit 1 when a function over the limit has no stated reason
      --root DIR   measure DIR instead of the repository's src/ (the self-test uses it)
  scripts/long-functions.py --self-test
      measures planted functions (a wrapped-signature 81-line one, a lambda-heavy one, a member
      function defined in a class body, an 80-line one) and fails unless exactly the first three
      are caught.
Exit 2 when ctags is missing or is not Universal Ctags (install: apt-get install universal-ctags,
scripts/setup-deps.sh does); under ctest (EMO_CTEST=1) that is a loud skip (77), a failure with CI=true.
"""
import os, pathlib, re, shutil, subprocess, sys, tempfile

# Functions allowed over the limit, with the reason splitting would hurt. Keep this list short.
ALLOWED = {
}


def no_ctags(why):
    """Exits: 2 with a one-line error; under ctest (EMO_CTEST=1) a loud skip (77) unless CI=true."""
    if os.environ.get("EMO_CTEST") == "1" and os.environ.get("CI") != "true":
        print(f"long-functions: SKIPPED (not a pass): {why}; install universal-ctags (scripts/setup-deps.sh)")
        sys.exit(77)
    print(f"long-functions: error: {why}; install Universal Ctags (apt-get install universal-ctags)", file=sys.stderr)
    sys.exit(2)


def ctags_or_exit():
    """The ctags executable's path; exits (no_ctags) unless it is Universal Ctags."""
    exe = shutil.which("ctags")
    if exe is None:
        no_ctags("ctags not found")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        no_ctags(f"{exe} is not Universal Ctags (it says: {version.splitlines()[0] if version else '?'})")
    return exe


def functions(exe, root):
    """(path, qualified name, start line, end line) of every function definition under root (1-based)."""
    files = sorted(str(p) for p in root.rglob("*") if p.suffix in (".cpp", ".h", ".cc", ".hpp"))
    if not files:
        return []
    out = subprocess.run([exe, "--language-force=C++", "--kinds-C++=f", "--fields=+neKS", "--fields=+Z",
                          "--extras=-q", "-o", "-", *files], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        if line.startswith("!_"):
            continue
        cols = line.split("\t")
        name, path = cols[0], cols[1]
        fields = dict(c.split(":", 1) for c in cols[3:] if ":" in c)
        if "end" not in fields or "line" not in fields:
            continue
        scope = fields.get("scope", "")
        scope = scope.split(":", 1)[1] if ":" in scope else scope
        qualified = f"{scope}::{name}" if scope else name
        found.append((path, qualified, int(fields["line"]), int(fields["end"])))
    return found


def signature_start(lines, n):
    """The first line (0-based) of the signature whose name is on 0-based line n: walks up over a
    return type or template line that does not end a statement, a block or a comment."""
    start = n
    while start > 0:
        above = lines[start - 1].strip()
        if not above or above.endswith((";", "}", "{", ":")) or above.startswith(("//", "#", "*", "/*", "}")):
            break
        start -= 1
    return start


def measure(root, limit):
    """[(lines, where, name, reason or None)] of every function under root longer than limit."""
    exe = ctags_or_exit()
    defs = functions(exe, root)
    # a lambda (ctags names it __anon...) nested in another function is part of that one
    named = [d for d in defs if "__anon" not in d[1].split("::")[-1]]
    anon = [d for d in defs if d not in named
            and not any(o[0] == d[0] and o[2] <= d[2] and d[3] <= o[3] and o != d for o in defs)]
    texts = {}
    found = []
    for path, name, line, end in named + anon:
        lines = texts.setdefault(path, pathlib.Path(path).read_text(errors="replace").split("\n"))
        start = signature_start(lines, line - 1)
        n = end - start
        if n <= limit:
            continue
        above = "\n".join(lines[max(0, start - 12):start])
        comment = re.search(r"//\s*long:\s*(.+)", above)
        short = re.sub(r"__anon\w+::", "", re.sub(r"^emo::", "", name))
        reason = ALLOWED.get(short) or (comment.group(1).strip() if comment else None)
        try:
            where = pathlib.Path(path).resolve().relative_to(root.resolve().parent)
        except ValueError:
            where = path
        found.append((n, f"{where}:{start + 1}", short, reason))
    return found


def report(found, limit, check):
    unexplained = [f for f in found if f[3] is None]
    for n, where, name, reason in sorted(found, reverse=True):
        print(f"{n:4d} lines  {where}  {name}" + (f"  [long: {reason}]" if reason else "  [NO REASON]"))
    print(f"{len(found)} functions over {limit} lines, {len(unexplained)} without a stated reason")
    return 1 if check and unexplained else 0


SELF_TEST = {
    # 81 lines with its signature wrapped over three lines and its brace indented 4: caught
    "wrapped.cpp": "namespace emo::x {\nnamespace {\n    std::vector<int>\n    wrapped(int a,\n            int b) {\n"
                   + "      int v = a + b;\n" * 76 + "      return {v};\n    }\n}  // namespace\n}\n",
    # lambdas in the body (each its own brace pair), 85 lines in all: caught once, as `lambdas`
    "lambdas.cpp": "int lambdas(int a) {\n  auto f = [&](int x) {\n    return x + a;\n  };\n"
                   + "  auto g = [](int y) { return y; };\n" * 79 + "  return f(a);\n}\n",
    # a member function defined in a class body, 90 lines: caught as Widget::draw
    "member.h": "#pragma once\nclass Widget {\n public:\n  int draw(int a) const {\n"
                + "    a += 1;\n" * 87 + "    return a;\n  }\n};\n",
    # exactly 80 lines: not caught
    "eighty.cpp": "static int\neighty(int a)\n{\n" + "  a += 1;\n" * 75 + "  return a;\n}\n",
}


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "src"
        root.mkdir()
        for name, text in SELF_TEST.items():
            (root / name).write_text(text)
        got = {name.split("::")[-1]: n for n, _, name, _ in measure(root, 80)}
        want = {"wrapped": 81, "lambdas": 85, "draw": 90}
        ok = got == want
        print(f"self-test: caught {got}, expected {want}: {'ok' if ok else 'FAILED'}")
        return 0 if ok else 1


def main(argv):
    if "--self-test" in argv:
        return self_test()
    limit = int(argv[argv.index("--limit") + 1]) if "--limit" in argv else 80
    root = pathlib.Path(argv[argv.index("--root") + 1]) if "--root" in argv \
        else pathlib.Path(__file__).resolve().parent.parent / "src"
    return report(measure(root, limit), limit, "--check" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
