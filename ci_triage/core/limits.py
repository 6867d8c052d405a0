"""Size and shape limits on what users and repositories hand us, checked before any parser sees it.

Pure: each check returns the problem as a phrase (or None) and the caller raises its own error, so the
config reader, the rule loader and the CLI's file reading share one set of numbers.

Why before parsing: tomllib grows quadratically in the number of parts of one dotted key (a 200 KB file
with a 100,000-part key `a.a.a...` took 23 GB), recurses once per nesting level, and `re.compile` of a
100 MB pattern took 142 s and 15 GB. A real ci-triage.toml or rule file is a few kilobytes.
"""

from __future__ import annotations

MAX_CONFIG_BYTES = 256 * 1024  # the repository config and a rule file
MAX_KEY_PARTS = 32  # parts of one dotted key or table header: `a.b.c` has 3
MAX_NESTING = 32  # arrays and inline tables inside one another
MAX_PATTERN_CHARS = 2000  # one regular expression (host_pattern, a rule's pattern)


def size_problem(size: int, limit: int = MAX_CONFIG_BYTES) -> str | None:
    """Whether a file of `size` bytes is too big to read; call with `os.stat` before reading."""
    if size > limit:
        return f"is {size:,} bytes; at most {limit:,} are read"
    return None


def pattern_problem(source: str, limit: int = MAX_PATTERN_CHARS) -> str | None:
    if len(source) > limit:
        return f"is {len(source):,} characters long; at most {limit:,} are allowed"
    return None


def toml_problem(text: str, *, max_chars: int = MAX_CONFIG_BYTES, max_key_parts: int = MAX_KEY_PARTS,
                 max_depth: int = MAX_NESTING) -> str | None:
    """The first limit a TOML text breaks (size, dotted-key parts, nesting), or None.

    A linear scan that knows TOML's strings and comments well enough not to count a dot or a bracket
    inside them; it does not validate (tomllib does that next, on text now known to be small and flat).
    """
    if len(text) > max_chars:
        return f"is {len(text):,} characters; at most {max_chars:,} are read"
    stack: list[str] = []  # "[" array or table header, "{" inline table
    in_key = True  # at the start of a line, after `{` and after `,` in an inline table
    dots = 0
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "\"'":
            triple = text.startswith(char * 3, i)
            end_mark = char * 3 if triple else char
            j = i + len(end_mark)
            while j < n:
                if char == '"' and text[j] == "\\":
                    j += 2
                    continue
                if text.startswith(end_mark, j):
                    break
                if not triple and text[j] == "\n":
                    break
                j += 1
            i = j + len(end_mark)
            continue
        if char == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if char == "\n":
            if not stack or stack[-1] == "h":
                stack.clear()
                in_key, dots = True, 0
        elif char == "." and in_key:
            dots += 1
            if dots >= max_key_parts:
                return f"has a dotted key of more than {max_key_parts} parts"
        elif char == "=" and in_key and (not stack or stack[-1] == "{"):
            in_key = False
        elif char in "[{":
            header = char == "[" and in_key and (not stack or stack[-1] == "h")
            stack.append("h" if header else char)
            if len(stack) > max_depth:
                return f"nests arrays or tables more than {max_depth} deep"
            if char == "{":
                in_key, dots = True, 0
        elif char in "]}":
            if stack:
                stack.pop()
        elif char == "," and stack and stack[-1] == "{":
            in_key, dots = True, 0
        i += 1
    return None
