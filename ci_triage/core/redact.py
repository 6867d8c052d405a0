"""The one redactor: credentials a log printed never leave the process.

Pure. Every text that leaves (the PR comment, the step summary, `$GITHUB_OUTPUT`, every report format,
error lines) passes `redact`; the classifier and the rerun decision see the original line, because
redaction happens only on output. GitHub masks only the secrets it was told about; a token a test prints
is public once ci-triage quotes the line in a comment.

The patterns follow published rule sets, learned from, not copied (each names the rule it follows):
- gitleaks v8.30.1 `config/gitleaks.toml` (github.com/gitleaks/gitleaks, commit b58d3f10): rules
  github-pat, github-oauth, github-app-token, github-refresh-token, github-fine-grained-pat,
  aws-access-token, gcp-api-key, jwt, private-key, gitlab-pat, slack-*-token, npm-access-token,
  pypi-upload-token, openai-api-key, and generic-api-key (its keyword list and its entropy floor 3.5).
- detect-secrets v1.5.0 (github.com/Yelp/detect-secrets, commit 5e141933): plugins/aws.py (the
  40-character secret access key near "aws" and a key word), plugins/azure_storage_key.py
  (`AccountKey=`), plugins/keyword.py (password-like key names).
Our patterns are looser in length than gitleaks' (a clipped or slightly odd token is still a token):
a false positive costs a `***` in a report, a false negative leaks a credential.

Every pattern uses bounded repetitions and never crosses a quote, a backslash or `<`/`>`, so redacting
a rendered document (a JSON string, the comment's hidden state line) cannot swallow its structure, and
the time stays linear in the text's length.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "***"  # what GitHub's own log masking shows, so a reader recognises it

# Text that is never part of a secret value here: whitespace, quotes, backslash, angle brackets, and the
# separators of key=value lists. Keeps matches inside one JSON string or one shell word.
_STOP = r"\s\"'`\\<>;,&"

_FIXED = [
    # GitHub ("About authentication to GitHub"; gitleaks github-*): ghp_ personal, gho_ OAuth,
    # ghu_ user-to-server, ghs_ server-to-server (GITHUB_TOKEN), ghr_ refresh; github_pat_ fine-grained.
    r"\bgh[pousr]_[A-Za-z0-9]{20,255}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,255}",
    # GitLab, Slack, npm, PyPI, OpenAI and Anthropic keys (gitleaks gitlab-pat, slack-*, npm-access-token,
    # pypi-upload-token, openai-api-key, anthropic-api-key): prefixes a CI log meets.
    r"\bglpat-[A-Za-z0-9_-]{20,255}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,255}",
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,1000}",
    r"\bsk-(?:proj-|svcacct-|admin-|ant-[a-z]+\d*-)?[A-Za-z0-9_-]{20,255}",
    # AWS access key ids (gitleaks aws-access-token; detect-secrets aws.py): a 4-letter kind, 16 more.
    r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    # GCP API keys (gitleaks gcp-api-key).
    r"\bAIza[A-Za-z0-9_-]{35}",
    # JSON Web Tokens (gitleaks jwt): base64url JSON header and payload, both starting `ey`, and a
    # signature that may be empty (an unsigned token still carries the claims).
    r"\bey[A-Za-z0-9_-]{10,4096}\.ey[A-Za-z0-9_-]{10,8192}\.[A-Za-z0-9_-]{0,4096}",
    # Private-key blocks (gitleaks private-key), also a GCP service-account key's `private_key` in JSON,
    # where line breaks are the two characters `\n`: the header and everything up to the footer, or, when
    # the footer was cut off, the base64 run after the header.
    r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[A-Za-z0-9+/=\s\\:,-]{0,16384}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"|[A-Za-z0-9+/=\s\\]{0,16384})",
]
_FIXED_RE = re.compile("|".join(f"(?:{p})" for p in _FIXED))

# (pattern, group to keep before the secret): the secret is what follows group 1.
_PREFIXED = [
    # Authorization headers and bare bearer/token words (RFC 6750 "b64token" characters).
    re.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token|basic|digest)\s+)[A-Za-z0-9_.~+/=-]{1,4096}"),
    re.compile(r"(?i)(\b(?:bearer|token)\s+)[A-Za-z0-9_.~+/=-]{16,4096}"),
    # URL credentials: scheme://user:password@host keeps the user; a bare long userinfo is a token
    # (`https://<token>@github.com` is how git is handed one).
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]{0,30}://[^/\s:@" + _STOP[2:] + r"]{0,256}:)[^@/\s" + _STOP[2:] + r"]{1,1024}(?=@)"),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]{0,30}://)[A-Za-z0-9_.~+-]{20,1024}(?=@)"),
    # Azure storage / Service Bus connection strings and SAS signatures (detect-secrets
    # azure_storage_key.py; Microsoft's connection-string docs name these keys).
    re.compile(r"(?i)(\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*)[^" + _STOP + r"]{8,1024}"),
    re.compile(r"([?&]sig=)[A-Za-z0-9%+/=]{16,1024}"),
    # AWS secret access keys: 40 base64 characters near "aws" and a key word (detect-secrets aws.py).
    re.compile(r"(?i)(\baws[A-Za-z0-9_.-]{0,20}?(?:secret|key|pass|token)[A-Za-z0-9_.-]{0,20}[\"']?\s*(?:=|:|=>)\s*[\"']?)"
               r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"),
]

# Generic `name=value` secrets (gitleaks generic-api-key keywords, detect-secrets keyword.py): a name
# containing a key word, an assignment, then a value judged by its entropy (below).
_GENERIC = re.compile(
    r"(?i)(\b[A-Za-z0-9_.-]{0,40}?(?:access|auth|api|credential|creds|key|passw(?:or)?d|pwd|secret|token)"
    r"[A-Za-z0-9_.-]{0,20}[\"']?\s{0,3}(?:=|:|=>|:=)\s{0,3}[\"']?)([^" + _STOP + r"]{6,512})")
_PASSWORDISH = re.compile(r"(?i)passw(?:or)?d|pwd|secret")
ENTROPY_FLOOR = 3.5  # bits per character (gitleaks generic-api-key); random base64 is near 6, words near 3


def entropy(text: str) -> float:
    """Shannon entropy of the characters of `text`, in bits per character."""
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    total = len(text)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def _looks_secret(name: str, value: str) -> bool:
    if value == REDACTED or value.startswith(("$", "%", "{{", "${")):  # a placeholder, not a value
        return False
    if _PASSWORDISH.search(name):
        # Passwords are often short; one that mixes in a digit or a symbol is redacted, a plain word
        # ("password: incorrect") is prose unless it is long and varied.
        return len(value) >= 6 and (any(not c.isalpha() for c in value)
                                    or (len(value) >= 16 and entropy(value) >= ENTROPY_FLOOR))
    return len(value) >= 10 and entropy(value) >= ENTROPY_FLOOR and any(c.isdigit() for c in value)


def _generic(match: re.Match[str]) -> str:
    name, value = match.group(1), match.group(2)
    return name + REDACTED if _looks_secret(name, value) else match.group(0)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every given secret, and anything shaped like a credential, replaced by ***."""
    if not text:
        return text
    # Longest first, so a secret that contains another is replaced whole.
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _FIXED_RE.sub(REDACTED, text)
    for pattern in _PREFIXED:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return _GENERIC.sub(_generic, text)


def redact_tree(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """Every string inside nested dicts, lists and tuples redacted (dict keys are ours, kept)."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: redact_tree(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(item, secrets) for item in value]
    return value
