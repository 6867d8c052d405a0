#!/usr/bin/env python3
"""Vendor a small subset of GitHub's published REST API description.

Reads the unpacked npm packages ``@octokit/openapi`` and
``@octokit/webhooks-examples`` and writes, under ``tests/github_schemas/``:

* ``openapi-subset.json``    -- response schemas, parameters and request bodies
  of the operations ci-triage talks to, plus a few webhook payload schemas;
* ``webhook-examples.json``  -- example webhook payloads for a few events;
* ``NOTES-for-fake.md``      -- a readable digest of the required fields,
  formats and enums of the GET 200 responses, for whoever writes fakes.

The schemas are converted from OpenAPI 3.0 to JSON Schema Draft 2020-12
(``nullable: true`` becomes a ``"null"`` type / ``anyOf`` alternative) so that
``jsonschema.Draft202012Validator`` validates payloads the way GitHub means.

Usage::

    mkdir /tmp/gh && cd /tmp/gh
    npm pack @octokit/openapi @octokit/webhooks-examples
    mkdir openapi examples
    tar xzf octokit-openapi-*.tgz -C openapi
    tar xzf octokit-webhooks-examples-*.tgz -C examples
    python tools/vendor_github_schemas.py \\
        --openapi-dir /tmp/gh/openapi/package \\
        --examples-dir /tmp/gh/examples/package
"""

from __future__ import annotations

import argparse
import datetime as _dt
import glob
import json
import os
import sys
from typing import Any

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tests", "github_schemas")
SCRIPT_NAME = "tools/vendor_github_schemas.py"

OPERATIONS: list[tuple[str, str]] = [
    ("GET", "/repos/{owner}/{repo}"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("GET", "/repos/{owner}/{repo}/pulls"),
    ("GET", "/repos/{owner}/{repo}/actions/runs"),
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}"),
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}"),
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"),
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs"),
    ("GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}"),
    ("GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs"),
    ("GET", "/repos/{owner}/{repo}/actions/workflows"),
    ("GET", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}"),
    ("GET", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"),
    ("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations"),
    ("GET", "/repos/{owner}/{repo}/contents/{path}"),
    ("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("POST", "/repos/{owner}/{repo}/actions/jobs/{job_id}/rerun"),
    ("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("GET", "/rate_limit"),
    ("GET", "/user"),
]

# Webhook payload schemas (keys of the description's `webhooks`/`x-webhooks`).
WEBHOOK_SCHEMAS = [
    "workflow-run-completed",
    "workflow-run-in-progress",
    "workflow-run-requested",
    "workflow-job-completed",
    "workflow-job-in-progress",
    "workflow-job-queued",
    "workflow-job-waiting",
    "issue-comment-created",
    "pull-request-opened",
    "pull-request-synchronize",
]

# Webhook example payloads: event name -> actions to keep (None = all).
WEBHOOK_EXAMPLES: dict[str, list[str] | None] = {
    "workflow_run": None,
    "workflow_job": None,
    "issue_comment": ["created"],
    "pull_request": ["opened", "synchronize"],
}

# A $ref chain deeper than this (or a $ref that refers to itself through
# its own expansion) is replaced by an unconstrained schema carrying
# "x-vendor-truncated-ref".  The package's *.deref.json has no $ref left,
# so this only matters when falling back to the non-dereferenced file.
MAX_REF_DEPTH = 12

# Keys that hold one schema / a map of schemas / a list of schemas.
_SCHEMA_KEYS = ("items", "not", "additionalProperties", "contains", "propertyNames")
_SCHEMA_MAP_KEYS = ("properties", "patternProperties")
_SCHEMA_LIST_KEYS = ("allOf", "anyOf", "oneOf", "prefixItems")


# --------------------------------------------------------------------------
# Source selection
# --------------------------------------------------------------------------

def _read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def choose_description(openapi_dir: str) -> str:
    """Pick the api.github.com description: 3.1 deref > deref > plain."""
    gen = os.path.join(openapi_dir, "generated")
    cands = sorted(glob.glob(os.path.join(gen, "api.github.com*.json")))
    if not cands:
        raise SystemExit(f"no generated/api.github.com*.json under {openapi_dir}")

    def rank(path: str) -> tuple[int, int]:
        name = os.path.basename(path)
        return ("3.1" in name, "deref" in name)

    cands.sort(key=rank, reverse=True)
    return cands[0]


# --------------------------------------------------------------------------
# $ref resolution (only needed for a non-dereferenced source)
# --------------------------------------------------------------------------

def _pointer(root: Any, ref: str) -> Any:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref supported, got {ref!r}")
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def deref(node: Any, root: Any, stack: tuple[str, ...] = ()) -> Any:
    """Return a copy of ``node`` with every local ``$ref`` inlined."""
    if isinstance(node, list):
        return [deref(v, root, stack) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        if ref in stack or len(stack) >= MAX_REF_DEPTH:
            return {
                "description": "recursive/too deep $ref truncated by vendoring",
                "x-vendor-truncated-ref": ref,
            }
        target = deref(_pointer(root, ref), root, stack + (ref,))
        extra = {k: deref(v, root, stack) for k, v in node.items() if k != "$ref"}
        if extra and isinstance(target, dict):
            target = {**target, **extra}
        return target
    return {k: deref(v, root, stack) for k, v in node.items()}


# --------------------------------------------------------------------------
# OpenAPI 3.0 schema -> JSON Schema 2020-12
# --------------------------------------------------------------------------

def to_json_schema(schema: Any, is_30: bool) -> Any:
    """Convert an OpenAPI schema object (recursively) to Draft 2020-12.

    * ``nullable: true`` with a ``type`` and no combinator -> type union
      (and ``None`` added to an ``enum``);
    * ``nullable: true`` with allOf/anyOf/oneOf -> ``anyOf: [<rest>, null]``
      (GitHub's intent; strict 3.0.3 would ignore ``nullable`` there);
    * ``nullable: true`` alone -> dropped (already accepts null);
    * boolean ``exclusiveMinimum``/``exclusiveMaximum`` -> numeric form.
    ``additionalProperties`` and everything else is left as in the source.
    """
    if isinstance(schema, bool) or not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, val in schema.items():
        if key in _SCHEMA_KEYS and isinstance(val, (dict, bool)):
            out[key] = to_json_schema(val, is_30)
        elif key in _SCHEMA_MAP_KEYS and isinstance(val, dict):
            out[key] = {k: to_json_schema(v, is_30) for k, v in val.items()}
        elif key in _SCHEMA_LIST_KEYS and isinstance(val, list):
            out[key] = [to_json_schema(v, is_30) for v in val]
        else:
            out[key] = val
    if not is_30:
        return out

    for bound, excl in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(out.get(excl), bool):
            if out.pop(excl) and bound in out:
                out[excl] = out.pop(bound)

    if out.pop("nullable", False) is True:
        has_comb = any(k in out for k in ("allOf", "anyOf", "oneOf"))
        if "type" in out and not has_comb:
            t = out["type"]
            types = list(t) if isinstance(t, list) else [t]
            if "null" not in types:
                types.append("null")
            out["type"] = types
            if "enum" in out and None not in out["enum"]:
                out["enum"] = list(out["enum"]) + [None]
        elif has_comb or "type" in out:
            annotations = {
                k: out.pop(k)
                for k in ("title", "description", "example", "deprecated")
                if k in out
            }
            out = {**annotations, "anyOf": [out, {"type": "null"}]}
        # else: no type constraint at all -> null is already accepted
    return out


# --------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------

def _convert_param(p: dict, is_30: bool) -> dict:
    keep = {k: p[k] for k in ("name", "in", "description", "required") if k in p}
    if "schema" in p:
        keep["schema"] = to_json_schema(p["schema"], is_30)
    keep.setdefault("required", False)
    return keep


def extract_operation(doc: dict, method: str, path: str, is_30: bool) -> dict:
    try:
        op = doc["paths"][path][method.lower()]
    except KeyError:
        raise SystemExit(f"operation {method} {path} not in description") from None
    op = deref(op, doc)
    path_level = deref(doc["paths"][path].get("parameters", []), doc)
    params = [_convert_param(p, is_30) for p in path_level + op.get("parameters", [])]
    responses: dict[str, Any] = {}
    for code, resp in op.get("responses", {}).items():
        content = resp.get("content") or {}
        entry: dict[str, Any] = {
            "description": resp.get("description", ""),
            "content_types": sorted(content),
            "schema": None,
        }
        if "application/json" in content and "schema" in content["application/json"]:
            entry["schema"] = to_json_schema(content["application/json"]["schema"], is_30)
        # GitHub's own example bodies (often older than the schema: they may
        # lack fields that were made required later -- see NOTES-for-fake.md)
        jc = content.get("application/json") or {}
        examples = {n: e["value"] for n, e in (jc.get("examples") or {}).items() if "value" in e}
        if "example" in jc:
            examples.setdefault("example", jc["example"])
        if examples:
            entry["examples"] = examples
        headers = {}
        for hname, h in (resp.get("headers") or {}).items():
            hh = {k: h[k] for k in ("description", "required") if k in h}
            if "schema" in h:
                hh["schema"] = to_json_schema(h["schema"], is_30)
            headers[hname] = hh
        entry["headers"] = headers
        responses[code] = entry
    result: dict[str, Any] = {
        "operationId": op.get("operationId"),
        "summary": op.get("summary"),
        "docs_url": (op.get("externalDocs") or {}).get("url"),
        "parameters": params,
        "responses": responses,
    }
    body = (op.get("requestBody") or {}).get("content", {}).get("application/json")
    if body and "schema" in body:
        result["requestBody"] = {
            "required": bool(op["requestBody"].get("required", False)),
            "schema": to_json_schema(body["schema"], is_30),
        }
    return result


def extract_webhooks(doc: dict, is_30: bool) -> dict:
    hooks = doc.get("webhooks") or doc.get("x-webhooks") or {}
    out = {}
    for name in WEBHOOK_SCHEMAS:
        if name not in hooks:
            print(f"warning: webhook {name} not in description", file=sys.stderr)
            continue
        post = deref(hooks[name]["post"], doc)
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        out[name] = {
            "operationId": post.get("operationId"),
            "schema": to_json_schema(schema, is_30),
        }
    return out


def basic_error_schema(doc: dict, ops: dict, is_30: bool) -> dict:
    comps = (doc.get("components") or {}).get("schemas") or {}
    if "basic-error" in comps:
        return to_json_schema(deref(comps["basic-error"], doc), is_30)
    for op in ops.values():
        resp = op["responses"].get("404")
        if resp and resp["schema"] and resp["schema"].get("title") == "Basic Error":
            return resp["schema"]
    raise SystemExit("could not find the basic-error schema")


def extract_examples(examples_dir: str) -> tuple[dict, dict]:
    pkg = _read_json(os.path.join(examples_dir, "package.json"))
    data = _read_json(os.path.join(examples_dir, "api.github.com", "index.json"))
    by_name = {d["name"]: d for d in data}
    examples: dict[str, list] = {}
    for event, actions in WEBHOOK_EXAMPLES.items():
        if event not in by_name:
            raise SystemExit(f"no examples for {event}")
        for ex in by_name[event]["examples"]:
            action = ex.get("action")
            if actions is not None and action not in actions:
                continue
            examples.setdefault(f"{event}.{action}", []).append(ex)
    source = {
        "package": pkg["name"],
        "version": pkg["version"],
        "license": pkg.get("license"),
        "file": "api.github.com/index.json",
        "extracted_by": SCRIPT_NAME,
    }
    return source, examples


# --------------------------------------------------------------------------
# NOTES-for-fake.md
# --------------------------------------------------------------------------

def _types(s: dict) -> tuple[list[str], dict]:
    """(type names incl. 'null', the non-null branch schema) of a schema."""
    if "anyOf" in s and {"type": "null"} in s["anyOf"] and len(s["anyOf"]) == 2:
        inner = next(x for x in s["anyOf"] if x != {"type": "null"})
        t, inner2 = _types(inner)
        return t + ["null"], inner2
    if "allOf" in s and len(s["allOf"]) == 1 and "type" not in s:
        return _types(s["allOf"][0])
    t = s.get("type")
    if t is None:
        if "oneOf" in s or "anyOf" in s:
            return ["oneOf" if "oneOf" in s else "anyOf"], s
        return ["any"], s
    return (list(t) if isinstance(t, list) else [t]), s


def _describe(s: dict) -> str:
    types, inner = _types(s)
    parts = ["|".join(types)]
    fmt = inner.get("format")
    if fmt:
        parts.append(f"format={fmt}")
    enum = inner.get("enum")
    if enum:
        parts.append("enum=" + ", ".join("null" if e is None else str(e) for e in enum))
    return " ".join(parts)


def _notes_for(s: dict, prefix: str, lines: list[str], depth: int, seen: dict, here: str,
               suffix: str = "") -> None:
    types, inner = _types(s)
    if "array" in types and isinstance(inner.get("items"), dict):
        _notes_for(inner["items"], prefix + "[]", lines, depth, seen, here, suffix)
        return
    if types and types[0] in ("oneOf", "anyOf"):
        for i, alt in enumerate(inner.get(types[0], [])):
            title = alt.get("title", f"alternative {i}")
            lines.append(f"- `{prefix or '(root)'}` {types[0]} alternative {i}: {title}")
            _notes_for(alt, prefix, lines, depth, seen, here, suffix)
        return
    if "object" not in types and "properties" not in inner:
        return
    props = inner.get("properties") or {}
    req = inner.get("required") or []
    title = inner.get("title")
    where = prefix or "(root)"
    ident = (title, tuple(req), tuple(sorted(props)))
    if title and ident in seen and depth > 0:
        first_where, first_op = seen[ident]
        ref = f"`{first_where}` above" if first_op == here else f"`{first_where}` in {first_op}"
        lines.append(f"- `{where}`{suffix} ({title}): same as {ref}")
        return
    if title:
        seen[ident] = (where, here)
    opt = [k for k in props if k not in req]
    label = f"- `{where}`{suffix}{f' ({title})' if title else ''}"
    if req:
        lines.append(f"{label} required: " + ", ".join(f"`{r}`" for r in req))
    else:
        lines.append(f"{label}: no required fields")
    for r in req:
        if r in props:
            lines.append(f"  - `{r}`: {_describe(props[r])}")
    if opt:
        lines.append("  - optional: " + ", ".join(f"`{o}`" for o in opt))
    if depth >= 3:
        return
    for r in req:
        if r in props:
            _notes_for(props[r], f"{prefix}.{r}" if prefix else r, lines, depth + 1, seen, here)
    # optional sub-objects that have required fields of their own (e.g.
    # jobs[].steps[]): if the fake sends them, they must be complete
    if depth >= 2:
        return
    for o in opt:
        if _has_required(props[o]):
            _notes_for(props[o], f"{prefix}.{o}" if prefix else o,
                       lines, depth + 1, seen, here, " (optional)")


def _has_required(s: dict) -> bool:
    types, inner = _types(s)
    if "array" in types and isinstance(inner.get("items"), dict):
        return _has_required(inner["items"])
    return bool(inner.get("required")) and "object" in types


GOTCHAS = """\
## Gotchas (read first)

- **Present-but-null.** Many required fields are nullable: the key must be
  there with `null`, never omitted. Jobs: `conclusion`, `completed_at`,
  `workflow_name`, `head_branch`, `html_url`, `runner_id`, `runner_name`,
  `runner_group_id`, `runner_group_name`. Runs: `status`, `conclusion`,
  `head_branch`, `head_commit`, `pull_requests`. Repos: `description`,
  `homepage`, `language`, `license`, `mirror_url`. Annotations:
  `start_column`, `end_column`, `annotation_level`, `title`, `message`,
  `raw_details`. Pulls: `body`, `closed_at`, `merged_at`, `merge_commit_sha`,
  `milestone`, `assignee`, `auto_merge`, `merged_by`, `mergeable`.
- **Job `created_at` is required** (and `started_at` is a non-null
  date-time even for queued jobs). GitHub's own docs example for jobs lacks
  `created_at`; do not copy docs examples verbatim. Likewise the docs
  example of GET /repos lacks `language`, PR examples lack
  `requested_teams[].type`, the permission example lacks `user.role_name`.
- **Job `status` enum** is queued, in_progress, completed, waiting,
  requested, pending; **`conclusion`** is success, failure, neutral,
  cancelled, skipped, timed_out, action_required or null. **Step**
  `status` is only queued, in_progress, completed; step `conclusion` is a
  free string|null; `steps` itself is optional, but each step needs
  `name`, `status`, `conclusion`, `number`.
- **Workflow run `status`/`conclusion` have no enum** in the schema (plain
  string|null); use GitHub's real values (completed/in_progress/queued/...;
  success/failure/cancelled/...). `run_attempt`, `actor`,
  `triggering_actor`, `run_started_at`, `name` are optional, but
  `display_title`, `path`, `head_repository` and `repository` (a Minimal
  Repository: ~46 required keys, mostly `*_url` strings, plus `owner` as a
  full Simple User) are required.
- **Rerun endpoints answer `201` with `{}`** (schema "Empty Object",
  `additionalProperties: false`); the docs example shows `null`.
- **Job logs answer `302`** with a `Location` header and no JSON body.
- **Contents** is a `oneOf`: a JSON array for a directory, or an object
  whose `type` is `file` (needs `content` + `encoding`), `symlink` (needs
  `target`) or `submodule` (needs `submodule_git_url`). Because it is
  `oneOf`, a file object must not also satisfy another branch.
- **Lists**: pulls, pull files, annotations and issue comments are bare
  JSON arrays; runs/jobs/workflows are wrapped objects with `total_count`.
- **Extra keys are allowed** almost everywhere (no `additionalProperties:
  false` except the Empty Object), so a misspelt optional field passes the
  default check; use `validate_response(..., strict=True)` to catch that.
- **Formats**: jsonschema does not assert `format` by default;
  `validate.py` asserts `date-time` (RFC 3339, e.g. `2024-05-01T10:00:00Z`)
  but not `uri`/`email` (GitHub's `*_url` fields hold URI templates).
- **`/rate_limit`** requires `rate` and `resources.core`/`resources.search`,
  each with `limit`, `remaining`, `reset` (epoch seconds, integer), `used`.
- **404s**: every endpoint may answer the basic-error body
  `{"message": ..., "documentation_url": ...}` (no required fields);
  `validate.py` falls back to it when an operation declares no 404.
"""


def render_notes(subset: dict) -> str:
    src = subset["source"]
    out = [
        "# Notes for the fake GitHub API",
        "",
        f"Generated by `{SCRIPT_NAME}` from {src['package']} {src['version']}"
        f" (`{src['file']}`, OpenAPI {src['openapi_version']}). Do not edit by hand;"
        " regenerate instead.",
        "",
        "For every operation: the REQUIRED fields of the success response,"
        " walked into required object/array properties (3 levels deep, repeated"
        " titled objects shown once). `|null` means the key must be PRESENT but"
        " may be `null`. Formats are not enforced by jsonschema by default;"
        " `tests/github_schemas/validate.py` checks `date-time` itself.",
        "",
        GOTCHAS,
    ]
    seen: dict = {}
    for key, op in subset["operations"].items():
        method = key.split(" ", 1)[0]
        ok = [c for c in op["responses"] if c.startswith("2") or c == "302"]
        out.append(f"## {key}")
        out.append("")
        out.append(f"operationId `{op['operationId']}`; responses: "
                   + ", ".join(f"`{c}`" for c in op["responses"]))
        q = [p for p in op["parameters"] if p["in"] == "query"]
        if q:
            out.append("")
            out.append("Query parameters: " + ", ".join(
                f"`{p['name']}` ({_describe(p.get('schema', {}))})" for p in q))
        for code in ok:
            resp = op["responses"][code]
            out.append("")
            if resp["schema"] is None:
                hdrs = ", ".join(f"`{h}`" for h in resp["headers"]) or "none"
                out.append(f"**{code}**: no JSON body; headers: {hdrs}")
                continue
            if method != "GET" and code != "200" and code != "201":
                continue
            out.append(f"**{code}** ({_describe(resp['schema'])}):")
            out.append("")
            lines: list[str] = []
            _notes_for(resp["schema"], "", lines, 0, seen, f"{key} {code}")
            out.extend(lines)
        out.append("")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--openapi-dir", required=True,
                    help="unpacked @octokit/openapi package (the dir with package.json)")
    ap.add_argument("--examples-dir", required=True,
                    help="unpacked @octokit/webhooks-examples package")
    ap.add_argument("--out-dir", default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    pkg = _read_json(os.path.join(args.openapi_dir, "package.json"))
    desc_path = choose_description(args.openapi_dir)
    doc = _read_json(desc_path)
    oas = str(doc.get("openapi", ""))
    is_30 = oas.startswith("3.0")

    ops = {f"{m} {p}": extract_operation(doc, m, p, is_30) for m, p in OPERATIONS}
    subset = {
        "source": {
            "package": pkg["name"],
            "version": pkg["version"],
            "file": os.path.relpath(desc_path, args.openapi_dir).replace(os.sep, "/"),
            "openapi_version": oas,
            "info_version": (doc.get("info") or {}).get("version"),
            "license": pkg.get("license"),
            "extracted_by": SCRIPT_NAME,
            "converted_to": "JSON Schema draft 2020-12"
            + (" (nullable -> null type/anyOf)" if is_30 else ""),
            "max_ref_depth": MAX_REF_DEPTH,
        },
        "basic_error": basic_error_schema(doc, ops, is_30),
        "operations": ops,
        "webhooks": extract_webhooks(doc, is_30),
    }
    ex_source, examples = extract_examples(args.examples_dir)

    os.makedirs(args.out_dir, exist_ok=True)
    written = []
    for name, obj in (
        ("openapi-subset.json", subset),
        ("webhook-examples.json", {"source": ex_source, "examples": examples}),
    ):
        path = os.path.join(args.out_dir, name)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            fh.write("\n")
        written.append(path)
    notes = os.path.join(args.out_dir, "NOTES-for-fake.md")
    with open(notes, "w", encoding="utf-8") as fh:
        fh.write(render_notes(subset))
    written.append(notes)
    for path in written:
        print(f"{os.path.getsize(path):>10}  {os.path.relpath(path, REPO_ROOT)}")
    print(f"source: {pkg['name']}@{pkg['version']} {subset['source']['file']} "
          f"(OpenAPI {oas}); {ex_source['package']}@{ex_source['version']}; "
          f"{_dt.date.today().isoformat()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
