"""Stack frames from the common stack formats in a log excerpt, with paths made comparable to a PR's files.

Formats read (each line on its own, so the work is linear in the excerpt):
- Python tracebacks `  File "x.py", line 3, in f` (chained ones too: every traceback of the chain is read)
  and faulthandler dumps `  File "x.py", line 3 in f`;
- pytest's short (`path.py:22: in func`) and long (`path.py:22: ` / `path.py:22: ValueError`) entries;
- gdb `#N 0x... in f (...) at file.cc:12`, sanitizers `#N 0x... in f /path/file.cc:12:3`, glibc
  `backtrace_symbols()` `./prog(f+0x1d)[0x...]`;
- Rust `thread 'main' panicked at src/lib.rs:12:5` and backtrace `at ./src/lib.rs:12:5` lines;
- Go panics `\t/path/file.go:12 +0x1d` and `go test` failure locations `    x_test.go:12: message`;
- Node `at f (file.js:12:3)` / `at file.js:12:3`; Java/Kotlin `at pkg.Class.m(File.java:12)`.

Frames come out most recent call last within each stack (as Python prints them); formats that print the
innermost frame first (all but Python tracebacks and pytest) are turned round. `Frame.stack` numbers the
stacks of one excerpt (a chained exception, a sanitizer's access/free/alloc stacks, each goroutine).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ci_triage.core.logs.values import Frame

# Bounds: a frame line is short, so only the first MAX_LINE characters of a line are read; a stack is cut
# to its MAX_PER_STACK innermost frames and an excerpt to its last MAX_STACKS stacks.
MAX_LINE = 1000
MAX_PER_STACK = 40
MAX_STACKS = 8
# Frame lines further apart than this belong to different stacks (pytest's long style prints a whole
# function's source between two entries; a chained Python exception puts ~6 lines between tracebacks).
MAX_GAP = 80

# --- paths -------------------------------------------------------------------------------------------

# Where Actions runners check a repository out: hosted `/home/runner/work/<repo>/<repo>/` (macOS
# `/Users/runner/work/...`), self-hosted `<root>/_work/<repo>/<repo>/`, container jobs `/__w/<repo>/<repo>/`,
# hosted Windows `D:\a\<repo>\<repo>\` (backslashes are made forward slashes first).
_CHECKOUT = re.compile(r"^(?:.*?/(?:_work|work|__w)|[A-Za-z]:/a)/(?P<repo>[^/]+)/(?P=repo)/")
# Container jobs that mount or copy the checkout at a fixed place.
_CONTAINER_MOUNTS = ("/workspace/", "/app/", "/src/")
_SITE_PACKAGES = re.compile(r"^.*?/(?:site|dist)-packages/(?P<rest>.+)$")
# Code that is never the repository's own: the Rust toolchain and crate registry, Go's module cache and
# standard library, Node's internals and installed packages.
_THIRD_PARTY = (
    re.compile(r"^/rustc/[0-9a-f]+/library/(?P<name>[^/]+)/"),
    re.compile(r"/\.cargo/(?:registry/src|git/checkouts)/[^/]+/(?P<name>[^/]+)/"),
    re.compile(r"/pkg/mod/(?P<name>[^@]+)@"),
    re.compile(r"^(?:/usr/local/go|/usr/lib/go[^/]*|/opt/hostedtoolcache/go/[^/]+/x64)/src/(?P<name>[^/]+)/"),
    re.compile(r"^node:(?P<name>[^/:]+)"),
    re.compile(r"(?:^|/)node_modules/(?P<name>@[^/]+/[^/]+|[^/]+)/"),
    # the system's shared libraries (glibc's backtrace names them: `/lib/x86_64-linux-gnu/libc.so.6`)
    re.compile(r"^/(?:usr/)?lib(?:32|64)?/(?:.*/)?(?P<name>[^/]+\.so[.\d]*)$"),
)


def repo_relative(path: str) -> tuple[str, str | None]:
    """Make a stack path comparable to a PR's changed files: (path, package or None).

    A package names code outside the checkout (an installed copy or a dependency); for site-packages the
    path is then the package-relative one (`vllm/engine/llm_engine.py`), which is also where an installed
    copy of the repository's own package sits in the repository.
    """
    path = path.strip().removeprefix("file://").replace("\\", "/")
    # site-packages first: a virtualenv inside the checkout (`<checkout>/.venv/lib/...`) is not the repo's code.
    site = _SITE_PACKAGES.match(path)
    if site:
        rest = site.group("rest")
        return rest, rest.split("/", 1)[0].removesuffix(".py")
    checkout = _CHECKOUT.match(path)
    if checkout:
        return path[checkout.end():], None
    for pattern in _THIRD_PARTY:
        found = pattern.search(path)
        if found:
            return path, found.group("name")
    for mount in _CONTAINER_MOUNTS:
        if path.startswith(mount) and len(path) > len(mount):
            return path[len(mount):], None
    return path.removeprefix("./"), None


# --- one line at a time --------------------------------------------------------------------------------

# A line gives (path, line, function, innermost_first) or None; Go and Rust print a frame's function on
# one line and its location on the next, so the previous line is passed along.
_PY = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?P<comma>,?) in (?P<func>\S.*)$')
_PYTEST = re.compile(r"^(?P<path>(?:[A-Za-z]:)?[^\s:]+\.py):(?P<line>\d+): (?:in (?P<func>\S+)|(?P<err>[A-Za-z_][\w.]*))?\s*$")
_HASH = re.compile(r"^\s*#(?P<n>\d+)\s+(?P<rest>\S.*)$")
_ADDR_IN = re.compile(r"^0x[0-9a-fA-F]+ in ")
_LOCATION = re.compile(r"^(?P<path>(?:[A-Za-z]:)?[^\s:()]+):(?P<line>\d+)(?::\d+)?$")
_GLIBC = re.compile(r"^\s*(?P<binary>[^\s()\[\]]+)\((?P<func>[^\s()+]*)\+0x[0-9a-fA-F]+\)\s*\[0x[0-9a-fA-F]+\]\s*$")
_RUST_PANIC = re.compile(r"\bpanicked at (?:'[^']*', )?(?P<path>[^\s:]+):(?P<line>\d+):\d+:?\s*$")
_RUST_FRAME_NAME = re.compile(r"^\s*\d+:\s+(?:0x[0-9a-fA-F]+ - )?(?P<func>\S.*)$")
_GO_LOCATION = re.compile(r"^\s+(?P<path>\S+\.go):(?P<line>\d+)(?: \+0x[0-9a-fA-F]+)?\s*$")
_GO_TEST = re.compile(r"^\s+(?P<path>[\w.\-/]+\.go):(?P<line>\d+): \S")
_GO_FUNC = re.compile(r"^(?:created by )?(?P<func>[\w./*()\[\]{}$-]+?)(?:\(.*\))?(?: in goroutine \d+)?\s*$")
_AT = re.compile(r"^\s*at (?P<rest>\S.*)$")
_JAVA = re.compile(r"^(?:[\w.$-]+/)?(?P<func>[\w$.<>]+)\((?P<file>[^():]+?)(?::(?P<line>\d+))?\)\s*(?:~?\[.*\])?$")


def _hash_frame(rest: str) -> tuple[str, int, str] | None:
    """gdb `0x... in f (args) at file:line` / `f (args) at file:line`; sanitizer `0x... in f file:line:col`."""
    rest = _ADDR_IN.sub("", rest.rstrip(), count=1)
    at = rest.rfind(") at ")
    if at >= 0:  # gdb
        location = _LOCATION.match(rest[at + 5:].strip())
        function = rest[:rest.find(" (")] if " (" in rest else rest
        return (location.group("path"), int(location.group("line")), function) if location else None
    head, _, last = rest.rpartition(" ")
    location = _LOCATION.match(last)
    if location and head:  # sanitizer symbolised frame
        return location.group("path"), int(location.group("line")), head.strip()
    return None  # `(module+0x...)` frames name no source line


def _node_or_java(rest: str) -> tuple[str, int, str, bool] | None:
    java = _JAVA.match(rest)
    if java:
        if not java.group("line"):
            return None  # `(Native Method)`, `(Unknown Source)`
        # The printed file has no directory; the package stands in for it (`com/x/Foo.java`), which matches
        # a changed `src/main/java/com/x/Foo.java` by its end.
        parts = java.group("func").split(".")
        directory = "/".join(parts[:-2])
        path = f"{directory}/{java.group('file')}" if directory else java.group("file")
        return path, int(java.group("line")), java.group("func"), True
    function, location = "", rest.strip()
    if location.endswith(")") and " (" in location:
        split = location.rfind(" (")
        function, location = location[:split], location[split + 2:-1]
    if location.startswith("file://"):
        location = location[len("file://"):]
    path, _, tail = location.rpartition(":")
    if not tail.isdigit():
        return None
    maybe_path, _, line = path.rpartition(":")
    if line.isdigit() and maybe_path:  # path:line:col
        path, tail = maybe_path, line
    if not path or " " in path:
        return None
    return path, int(tail), function, True


def _parse(text: str, previous: str) -> tuple[str, int, str, bool] | None:
    text = text[:MAX_LINE]
    if 'File "' in text:
        found = _PY.match(text)
        if found:
            # faulthandler prints `line N in f` (no comma), most recent call first.
            return found.group("path"), int(found.group("line")), found.group("func").strip(), not found.group("comma")
    if ".py:" in text:
        found = _PYTEST.match(text)
        if found and not (found.group("err") or "").endswith("Warning"):
            return found.group("path"), int(found.group("line")), found.group("func") or "", False
    if "#" in text:
        found = _HASH.match(text)
        if found:
            frame = _hash_frame(found.group("rest"))
            if frame:
                return (*frame, True)
    if "panicked at " in text:
        found = _RUST_PANIC.search(text)
        if found:
            return found.group("path"), int(found.group("line")), "panic", True
    if ".go:" in text:
        found = _GO_LOCATION.match(text) or _GO_TEST.match(text)
        if found:
            function = _GO_FUNC.match(previous.strip()) if found.re is _GO_LOCATION else None
            return found.group("path"), int(found.group("line")), function.group("func") if function else "", True
    if "at " in text:
        found = _AT.match(text)
        if found:
            frame = _node_or_java(found.group("rest"))
            if frame:
                # A Rust backtrace prints `N: function` and then `at path:line:col` on the next line.
                name = _RUST_FRAME_NAME.match(previous)
                if name and not frame[2]:
                    return frame[0], frame[1], name.group("func").strip(), True
                return frame
    if "+0x" in text:
        found = _GLIBC.match(text)
        if found:
            return found.group("binary"), 0, found.group("func"), True
    return None


# --- stacks ------------------------------------------------------------------------------------------

# Lines that begin another stack: Python's traceback and faulthandler thread headers, pytest's per-test
# `____ test_x ____` banner, Go's `goroutine N [state]:`, the JVM's `Caused by:`.
_STACK_HEADERS = ("Traceback (most recent call last)", "(most recent call first)", "Caused by: ")
_GOROUTINE = re.compile(r"^goroutine \d+ \[")


def _starts_stack(text: str) -> bool:
    stripped = text.strip()
    return (any(header in text for header in _STACK_HEADERS) or bool(_GOROUTINE.match(stripped))
            or (stripped.startswith("___") and stripped.endswith("___") and len(stripped.strip("_ ")) > 0))


_Stack = list[tuple[Frame, bool]]


def _stacks(texts: Iterable[str]) -> list[tuple[_Stack, bool]]:
    """Frame lines grouped into stacks, each with whether a gap of more than MAX_GAP lines precedes it.
    A new stack also starts after a header line (_starts_stack), when the print order changes, or when a
    `#N`-numbered backtrace starts again at a lower number (a sanitizer's access, free and alloc stacks)."""
    stacks: list[tuple[_Stack, bool]] = []
    last_at = -MAX_GAP - 1
    last_order: bool | None = None
    last_hash = -1
    previous = ""
    header = False
    for index, text in enumerate(texts):
        text = text[:MAX_LINE]
        parsed = _parse(text, previous)
        previous = text
        if parsed is None:
            header = header or _starts_stack(text)
            continue
        raw_path, line, function, innermost_first = parsed
        hashed = _HASH.match(text)
        number = int(hashed.group("n")) if hashed else -1
        gap = index - last_at > MAX_GAP
        restart = 0 <= number <= last_hash
        if gap or header or innermost_first != last_order or restart or not stacks:
            header = False
            stacks.append(([], gap))
            if len(stacks) > MAX_STACKS:
                del stacks[0]
        last_at, last_order, last_hash = index, innermost_first, number
        path, package = repo_relative(raw_path)
        stack = stacks[-1][0]
        stack.append((Frame(path, line, function[:200], package), innermost_first))
        if len(stack) > 4 * MAX_PER_STACK:  # memory stays bounded on a pathological excerpt
            del stack[MAX_PER_STACK:-MAX_PER_STACK]
    return stacks


def frames_in(texts: Sequence[str]) -> tuple[Frame, ...]:
    """The frames of the last stack-bearing stretch of `texts` (the lines that end with the root cause):
    the stacks since the last gap of more than MAX_GAP lines, most recent call last in each (the innermost
    MAX_PER_STACK kept), numbered by `Frame.stack` in log order."""
    stacks = _stacks(texts)
    starts = [index for index, (_, gap) in enumerate(stacks) if gap]
    kept = stacks[starts[-1]:] if starts else stacks
    frames: list[Frame] = []
    for number, (stack, _) in enumerate(kept):
        ordered = [frame for frame, _ in stack]
        ordered = ordered[:MAX_PER_STACK][::-1] if stack[0][1] else ordered[-MAX_PER_STACK:]
        frames.extend(Frame(f.path, f.line, f.function, f.package, number) for f in ordered)
    return tuple(frames)
