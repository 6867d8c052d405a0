"""Per runner and per host: jobs, failures by category, infra failures, and the test against the pool.

analysis.py's module doc says what is counted and tested; this is how, in one pass over the rows.
Every counted row falls in one cell (entity, pool, slot), the slot being the failure's category (its
code; a missing one last) or "did not fail"; one bincount (or one sort, when the cells would outnumber
the rows) counts the cells, and every figure is read from those few thousand cells. When each runner
is on one host (the usual case, checked in the same pass that finds each runner's host), the hosts'
cells are the sums of their runners' cells, and no second pass over the rows is made.
"""

from __future__ import annotations

import numpy as np

from ci_triage.core.health.columns import (
    Codes,
    dense,
    mode,
    pair_counts,
    segment_starts,
    weighted_mode,
)
from ci_triage.core.health.records import RunnerHealth, is_infra
from ci_triage.core.health.stats import sick_mask


class Cells:
    """Counted rows per (entity, pool, slot), sorted; pool len(pools) is a missing pool."""

    def __init__(self, entity: np.ndarray, pool: np.ndarray, slot: np.ndarray, count: np.ndarray) -> None:
        self.entity, self.pool, self.slot, self.count = entity, pool, slot, count


def health(runner: Codes, host: Codes, counted: np.ndarray, failed: np.ndarray, pool: Codes, category: Codes,
           labels: Codes, alpha: float, min_infra: int) -> tuple[tuple[RunnerHealth, ...], tuple[RunnerHealth, ...]]:
    """(runners, hosts), each sick first, then by evidence, then by name."""
    slots = len(category) + 2  # the categories, a missing category, "did not fail"
    slot = np.where(failed, category.wrapped(), slots - 1)
    pools = pool.wrapped()
    runner_rows = counted & ~runner.flags(lambda e: e == "", missing=True)
    host_rows = counted & ~host.flags(lambda e: e == "", missing=True)
    runner_codes = _left_out(runner.codes, runner_rows, len(runner))
    runner_cells = _cells(runner_codes, len(runner), pools, len(pool) + 1, slot, slots)
    host_of, one_host = mode(runner_codes, len(runner), host.codes, host.ranks())
    label_of, one_label = mode(runner_codes, len(runner), labels.codes, labels.ranks())
    infra_slot = np.array([bool(text) and is_infra(text) for text in category.texts] + [False, False])
    runners = _figures(runner, runner_cells, pool, category, infra_slot, label_of, labels, alpha, min_infra,
                       host_of=host_of, host=host)
    if one_host and np.array_equal(runner_rows, host_rows):
        # Every runner on one host, the same rows counted: a host's cells are its runners' cells.
        cells = runner_cells
        host_cells = _merge(host_of[cells.entity], cells.pool, cells.slot, cells.count, len(pool) + 1, slots)
        jobs = np.bincount(cells.entity, weights=cells.count, minlength=len(runner)).astype(np.int64)
        present = np.flatnonzero(jobs)
        if one_label:
            host_label = weighted_mode(host_of[present], len(host), label_of[present], jobs[present], labels.ranks())
        else:
            host_label = mode(_left_out(host.codes, host_rows, len(host)), len(host), labels.codes, labels.ranks())[0]
        members: dict[int, list[str]] = {}
        for code, name in zip(host_of[present].tolist(), [runner.texts[r] for r in present.tolist()]):
            members.setdefault(code, []).append(name)
        runners_of = {code: tuple(sorted(names)) for code, names in members.items()}
    else:
        host_codes = _left_out(host.codes, host_rows, len(host))
        host_cells = _cells(host_codes, len(host), pools, len(pool) + 1, slot, slots)
        host_label = mode(host_codes, len(host), labels.codes, labels.ranks())[0]
        runners_of = _members(host_codes, len(host), runner)
    hosts = _figures(host, host_cells, pool, category, infra_slot, host_label, labels, alpha, min_infra,
                     runners_of=runners_of)
    return runners, hosts


def _left_out(codes: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """int64 codes with the rows not counted moved to code `size`."""
    found = codes.astype(np.int64)
    found[~rows] = size
    return found


def _cells(entity: np.ndarray, size: int, pools: np.ndarray, pool_size: int, slot: np.ndarray,
           slots: int) -> Cells:
    code = (entity * pool_size + pools) * slots + slot
    space = (size + 1) * pool_size * slots
    if dense(space, len(code)):
        counts = np.bincount(code, minlength=space)
        cells = np.flatnonzero(counts[:size * pool_size * slots])
        count = counts[cells]
    else:
        ordered = np.sort(code)
        starts = segment_starts(ordered)
        cells, count = ordered[starts], np.diff(np.append(starts, len(ordered)))
        keep = cells < size * pool_size * slots
        cells, count = cells[keep], count[keep]
    entity_pool, cell_slot = np.divmod(cells, slots)
    cell_entity, cell_pool = np.divmod(entity_pool, pool_size)
    return Cells(cell_entity, cell_pool, cell_slot, count.astype(np.int64))


def _merge(entity: np.ndarray, pool: np.ndarray, slot: np.ndarray, count: np.ndarray, pool_size: int,
           slots: int) -> Cells:
    """Cells summed into other entities (a few thousand cells: one small sort)."""
    code = (entity * pool_size + pool) * slots + slot
    cells, where = np.unique(code, return_inverse=True)
    total = np.bincount(where.reshape(-1), weights=count).astype(np.int64)
    entity_pool, cell_slot = np.divmod(cells, slots)
    cell_entity, cell_pool = np.divmod(entity_pool, pool_size)
    return Cells(cell_entity, cell_pool, cell_slot, total)


def _figures(entity: Codes, cells: Cells, pool: Codes, category: Codes, infra_slot: np.ndarray,
             label_of: np.ndarray, labels: Codes, alpha: float, min_infra: int, *, host_of: np.ndarray | None = None,
             host: Codes | None = None, runners_of: dict[int, tuple[str, ...]] | None = None
             ) -> tuple[RunnerHealth, ...]:
    size, pools = len(entity), len(pool)
    if not len(cells.entity):
        return ()
    did_fail = cells.slot < len(category) + 1
    bad_cell = infra_slot[cells.slot]
    jobs = np.bincount(cells.entity, weights=cells.count, minlength=size).astype(np.int64)
    failures = np.bincount(cells.entity[did_fail], weights=cells.count[did_fail], minlength=size).astype(np.int64)
    infra_count = np.bincount(cells.entity[bad_cell], weights=cells.count[bad_cell], minlength=size).astype(np.int64)
    present = np.flatnonzero(jobs)
    # The entity's pool: the pool most of its jobs ran on (ties: the first pool); the test reads its
    # jobs on that pool only. Missing pools are left out, as pandas' groupby leaves them out.
    known = cells.pool < pools
    pair = cells.entity[known] * (pools + 1) + cells.pool[known]
    starts = segment_starts(pair)  # cells are sorted by (entity, pool, slot)
    pair_entity, pair_pool = cells.entity[known][starts], cells.pool[known][starts]
    pair_n = np.add.reduceat(cells.count[known], starts) if len(starts) else np.zeros(0, dtype=np.int64)
    pair_k = np.add.reduceat(cells.count[known] * bad_cell[known], starts) if len(starts) else pair_n
    order = np.lexsort((pair_pool, -pair_n, pair_entity))
    main = order[segment_starts(pair_entity[order])]
    main_pool = np.full(size, -1, dtype=np.int64)
    main_n, main_k = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
    main_pool[pair_entity[main]], main_n[pair_entity[main]], main_k[pair_entity[main]] = \
        pair_pool[main], pair_n[main], pair_k[main]
    pool_jobs = np.bincount(pair_pool, weights=pair_n, minlength=pools).astype(np.int64)
    pool_infra = np.bincount(pair_pool, weights=pair_k, minlength=pools).astype(np.int64)
    members = np.bincount(pair_pool, minlength=pools)
    at = main_pool[present]
    n, k = main_n[present], main_k[present]
    N, K = pool_jobs[at], pool_infra[at]
    alone = members[at] < 2  # nothing to compare with
    p, q, sick = sick_mask(k, n, K, N, alpha=alpha, min_infra_failures=min_infra, comparable=~alone)
    rest_jobs, rest_infra = N - n, K - k
    rest_rate = np.where(rest_jobs > 0, rest_infra / np.maximum(rest_jobs, 1), 0.0)

    categories = _categories(cells, category)
    runners_of = runners_of or {}
    names = [entity.texts[code] for code in present.tolist()]
    label_texts = [labels.names[c] if c >= 0 else "" for c in label_of[present].tolist()]
    hosts = names if host is None else [(host.names[c] if c >= 0 else None) or None
                                        for c in host_of[present].tolist()]
    found = []
    for code, name, on_host, label, pool_code, count, failed, bad, pool_n, pool_k, rate, p_value, q_value, \
            is_sick in zip(present.tolist(), names, hosts, label_texts, at.tolist(), jobs[present].tolist(),
                           failures[present].tolist(), infra_count[present].tolist(), N.tolist(), K.tolist(),
                           rest_rate.tolist(), p.tolist(), q.tolist(), sick.tolist()):
        found.append(RunnerHealth(
            key=name, host=on_host, labels=tuple(label.split(",")) if label else (), pool=pool.texts[pool_code],
            jobs=count, failures=failed, infra_failures=bad, infra_failure_rate=bad / count if count else 0.0,
            pool_jobs=pool_n, pool_infra_failures=pool_k, pool_infra_failure_rate=rate, p_value=p_value,
            q_value=q_value, sick=is_sick, categories=categories.get(code, {}), runners=runners_of.get(code, ())))
    # Sick first, then by evidence, then by name: the order a reader wants.
    found.sort(key=lambda h: (not h.sick, h.p_value, -h.infra_failure_rate, h.key))
    return tuple(found)


def _categories(cells: Cells, category: Codes) -> dict[int, dict[str, int]]:
    """Per entity code, its failures by category (known categories), most first, ties by name."""
    width = max(len(category), 1)
    failed = cells.slot < len(category)
    if not failed.any():
        return {}
    totals = np.bincount(cells.entity[failed] * width + cells.slot[failed], weights=cells.count[failed])
    codes = np.flatnonzero(totals)
    entity, slot, count = codes // width, codes % width, totals[codes].astype(np.int64)
    order = np.lexsort((category.ranks()[slot], -count, entity))  # per entity: most first, ties by name
    found: dict[int, dict[str, int]] = {}
    texts = category.texts
    for code, cat, n in zip(entity[order].tolist(), slot[order].tolist(), count[order].tolist()):
        found.setdefault(code, {})[texts[cat]] = n
    return found


def _members(host_codes: np.ndarray, hosts: int, runner: Codes) -> dict[int, tuple[str, ...]]:
    """Per host code, the names of its runners (of the counted rows), sorted."""
    rows = np.flatnonzero(host_codes < hosts)
    runner_codes = runner.wrapped(rows)  # a missing runner reads "nan", as pandas reads it
    pair_host, pair_runner, _ = pair_counts(host_codes[rows], runner_codes, len(runner) + 1)
    found: dict[int, list[str]] = {}
    for code, name in zip(pair_host.tolist(), runner.names[pair_runner].tolist()):
        found.setdefault(code, []).append(name)
    return {code: tuple(sorted(names)) for code, names in found.items()}

