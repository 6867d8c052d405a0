"""Environment + flags -> settings, following the conventions of GitHub Actions and the gh CLI.

GITHUB_API_URL (default https://api.github.com, so GitHub Enterprise works), GITHUB_TOKEN or GH_TOKEN,
GITHUB_REPOSITORY for the repository, CI_TRIAGE_STORE for the cache file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from ci_triage.errors import UsageError

DEFAULT_API_URL = "https://api.github.com"
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")


def resolve_repo(flag: str | None, env: Mapping[str, str] = os.environ) -> str:
    repo = flag or env.get("GITHUB_REPOSITORY")
    if not repo:
        raise UsageError("no repository given", hint="Pass --repo OWNER/NAME or set GITHUB_REPOSITORY.")
    if not _REPO.match(repo):
        raise UsageError(f"repository {repo!r} is not of the form OWNER/NAME")
    return repo


def resolve_token(env: Mapping[str, str] = os.environ) -> str:
    token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
    if not token:
        raise UsageError(
            "no GitHub token",
            hint="Set GITHUB_TOKEN or GH_TOKEN (job logs need one even for public repositories), "
            "or try the offline demo with --demo.",
        )
    return token


def resolve_api_url(env: Mapping[str, str] = os.environ) -> str:
    url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if not url.startswith(("https://", "http://")):
        raise UsageError(f"GITHUB_API_URL {url!r} is not an http(s) URL")
    return url


def default_store_path(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("CI_TRIAGE_STORE"):
        return Path(env["CI_TRIAGE_STORE"]).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ci-triage")) / "store.sqlite3"
