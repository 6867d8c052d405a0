"""Path globs as GitHub Actions `paths:` filters use them (and `[[jobs.owns]]` in the config file).

Shared by the config file's job ownership and by workflow `paths` filters, so both mean the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache


def path_matches(glob: str, path: str) -> bool:
    """Whether a repository path is covered by a glob.

    Globs are anchored at the repository root and match the whole path, as GitHub's `paths` filters
    do ("Path patterns must match the whole path, and start from the repository's root", workflow
    syntax docs, filter pattern cheat sheet): `*.js` is the root's .js files, `**.js` all of them.
    `*` and `?` (one character) stay within a directory; `**` crosses directories, and `**/` also
    matches no directory (`a/**/b` matches `a/b`). A glob naming a directory (trailing slash, or no
    wildcard in its last part) covers everything beneath it, as in .gitignore. `[...]` as in fnmatch.
    """
    return _glob_regex(glob).match(path.lstrip("/")) is not None


@lru_cache(maxsize=1024)
def _glob_regex(glob: str) -> re.Pattern[str]:
    body = glob.lstrip("/").rstrip("/")
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = body.find("]", i + 2)  # a ']' right after '[' (or '[!') is a member, as in fnmatch
            if body.startswith("[!", i):
                end = body.find("]", i + 3)
            members = body[i + 1:end] if end != -1 else ""
            piece = _char_class(members) if end != -1 else None
            if piece is None:
                out.append(re.escape(char))
                i += 1
            else:
                out.append(piece)
                i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    # A glob that names a directory (a trailing slash, or no wildcard in its last part) covers what
    # is beneath it; `docs/*` stays "the files directly in docs", as in GitHub's filters.
    names_directory = glob.endswith("/") or not re.search(r"[*?\[]", body.rsplit("/", 1)[-1])
    return re.compile("".join(out) + (r"(?:/.*)?\Z" if names_directory else r"\Z"), re.DOTALL)


def _char_class(members: str) -> str | None:
    negate = members.startswith("!")
    if negate:
        members = members[1:]
    escaped = "".join("\\" + c if c in "\\^[]" else c for c in members)
    piece = f"[^/{escaped}]" if negate else f"(?!/)[{escaped}]"
    try:
        re.compile(piece)
    except re.error:  # a reversed range such as [z-a]: take the bracket literally
        return None
    return piece


def any_match(globs: Sequence[str], path: str) -> bool:
    """GitHub's `paths` semantics: a later `!pattern` excludes what earlier patterns included."""
    matched = False
    for glob in globs:
        if glob.startswith("!"):
            if matched and path_matches(glob[1:], path):
                matched = False
        elif path_matches(glob, path):
            matched = True
    return matched
