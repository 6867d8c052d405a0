"""Categorical columns as codes, and group counts over codes, for runner health (numpy only).

The analysis of a million job executions must cost a few sorts of a million integers, so it reads
every text column once as its category codes and never materialises a string per row. Groups of two
codes are counted with one bincount when their product is small and with one sort of a packed int64
key otherwise; "most frequent value" takes one pass when every entity has one value (the usual case:
a runner has one host, one label set).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

DENSE_FACTOR = 2  # a bincount of up to this many cells per row beats a sort
PACK_BITS = 62  # codes packed into one int64 key, a bit spare for the sign


class Codes:
    """One categorical column: its codes (-1 for a missing value) and the category texts.

    `names[-1]` is "nan", pandas' text for a missing value, so `names[codes]` reads like astype(str).
    The texts are made on first use: a column read only as codes (head SHAs) never makes them.
    """

    def __init__(self, column: pd.Series) -> None:
        if not isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype("category")
        self.codes = column.cat.codes.to_numpy()  # int8/16/32: cast where arithmetic needs it
        self._categories = column.cat.categories
        self._texts: list[str] | None = None
        self._names: np.ndarray | None = None

    @property
    def texts(self) -> list[str]:
        if self._texts is None:
            self._texts = [str(c) for c in self._categories.tolist()]
        return self._texts

    @property
    def names(self) -> np.ndarray:
        if self._names is None:
            self._names = np.array([*self.texts, "nan"], dtype=object)
        return self._names

    def __len__(self) -> int:
        return len(self._categories)

    def flags(self, predicate: Callable[[str], bool], missing: bool = False) -> np.ndarray:
        """predicate(text) per row, by one lookup per category."""
        table = np.array([bool(predicate(text)) for text in self.texts] + [missing], dtype=bool)
        return table[self.codes]

    def wrapped(self, rows: np.ndarray | None = None) -> np.ndarray:
        """int64 codes (of these rows: a mask or positions) with a missing value as its own last code
        (len(self)), where `names` says "nan"; one lookup in a small table (-1 reads its last entry)."""
        table = np.arange(len(self) + 1, dtype=np.int64)
        return table[self.codes if rows is None else self.codes[rows]]

    def ranks(self) -> np.ndarray:
        """Each category's place in text order (Python's string order), indexable by code; -1 last."""
        order = sorted(range(len(self.texts)), key=self.texts.__getitem__)
        rank = np.empty(len(self.texts) + 1, dtype=np.int64)
        rank[order] = np.arange(len(order))
        rank[-1] = len(order)
        return rank


def pair_counts(a: np.ndarray, b: np.ndarray, b_size: int, *masks: np.ndarray,
                inverse: bool = False) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The distinct (a, b) pairs, ordered by (a, b), with how many rows each has (and how many of the
    rows selected by each mask; with inverse=True, last, each row's pair). a and b are non-negative
    codes, b < b_size."""
    b_size = max(b_size, 1)
    code = a.astype(np.int64) * b_size + b
    space = (int(a.max()) + 1) * b_size if len(a) else 0
    if dense(space, len(code)):
        counts = np.bincount(code, minlength=space)
        pairs = np.flatnonzero(counts)
        found = [counts[pairs]] + [np.bincount(code[m], minlength=space)[pairs] for m in masks]
        if inverse:
            found.append((np.cumsum(counts > 0) - 1)[code])
    else:
        pairs, where, counts = np.unique(code, return_inverse=True, return_counts=True)
        where = where.reshape(-1)
        found = [counts] + [np.bincount(where[m], minlength=len(pairs)) for m in masks]
        if inverse:
            found.append(where)
    return pairs // b_size, pairs % b_size, found


def dense(space: int, rows: int) -> bool:
    """Whether counting `rows` values into `space` cells is cheaper by a bincount than by a sort."""
    return space <= DENSE_FACTOR * rows + 4096 if DENSE_FACTOR >= 0 else False


def segment_starts(sorted_codes: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts in a sorted array."""
    if not len(sorted_codes):
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1))


def mode(entity: np.ndarray, entities: int, value: np.ndarray,
         value_rank: np.ndarray) -> tuple[np.ndarray, bool]:
    """Per entity code, its most frequent value code (ties: the smallest value_rank), -1 for none, and
    whether every entity has one value (then the mode took one pass). Rows whose entity is `entities`
    are left out, and so are rows with value -1, as pandas' groupby leaves out missing keys."""
    chosen = np.full(entities + 1, -1, dtype=np.int64)
    chosen[entity] = value
    agree = chosen[entity] == value
    agree |= entity == entities
    if agree.all():  # one value per entity (a missing one included): it is the mode
        chosen[entities] = -1
        return chosen[:entities], True
    rows = np.flatnonzero((entity < entities) & (value >= 0))
    entity, value = entity[rows].astype(np.int64), value[rows].astype(np.int64)
    rank = value_rank[value]
    by_rank = np.full(len(value_rank), -1, dtype=np.int64)
    by_rank[rank] = value
    chosen = np.full(entities, -1, dtype=np.int64)
    if len(rows):
        pair_entity, pair_rank, (count,) = pair_counts(entity, rank, len(value_rank))
        order = np.lexsort((pair_rank, -count, pair_entity))
        first = order[segment_starts(pair_entity[order])]
        chosen[pair_entity[first]] = by_rank[pair_rank[first]]
    return chosen, False


def weighted_mode(entity: np.ndarray, entities: int, value: np.ndarray, weight: np.ndarray,
                  value_rank: np.ndarray) -> np.ndarray:
    """mode() of rows given as (entity, value, how many rows): the value with the largest total weight."""
    chosen = np.full(entities, -1, dtype=np.int64)
    keep = value >= 0
    entity, value, weight = entity[keep], value[keep], weight[keep]
    if not len(entity):
        return chosen
    rank = value_rank[value]
    code = entity * len(value_rank) + rank
    pairs, where = np.unique(code, return_inverse=True)
    total = np.bincount(where.reshape(-1), weights=weight).astype(np.int64)
    pair_entity, pair_rank = pairs // len(value_rank), pairs % len(value_rank)
    by_rank = np.full(len(value_rank), -1, dtype=np.int64)
    by_rank[rank] = value
    order = np.lexsort((pair_rank, -total, pair_entity))
    first = order[segment_starts(pair_entity[order])]
    chosen[pair_entity[first]] = by_rank[pair_rank[first]]
    return chosen


def pack(columns: list[np.ndarray]) -> np.ndarray | None:
    """One int64 per row ordered like the tuple of the non-negative code columns, or None when their
    bit widths do not fit in PACK_BITS bits."""
    widths = [int(c.max(initial=0)).bit_length() for c in columns]
    if sum(widths) > PACK_BITS:
        return None
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column, width in zip(columns, widths):
        key <<= width
        key |= column
    return key


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values (np.unique without its hash table, which is slower on int64 here)."""
    if not len(values):
        return values.copy()
    narrow = values.dtype.kind == "i" and int(values.min()) >= 0 and int(values.max()) < 2**31
    ordered = np.sort(values.astype(np.int32) if narrow else values)  # an int32 sort is about twice as fast
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep].astype(values.dtype, copy=False)


def dense_ranks(values: np.ndarray) -> np.ndarray:
    """Codes 0..m-1 in the order of the values (equal values, equal codes)."""
    return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64)


def group_ids(columns: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Per row, the number of its distinct tuple of codes in tuple order, and how many there are."""
    if not len(columns[0]):
        return np.zeros(0, dtype=np.int64), 0
    ranked = [dense_ranks(c) for c in columns]
    key = pack(ranked)
    if key is not None:
        ids = dense_ranks(key)
    else:
        order = np.lexsort(ranked[::-1])
        changed = np.zeros(len(order), dtype=bool)
        for column in ranked:
            changed[1:] |= column[order][1:] != column[order][:-1]
        ids = np.empty(len(order), dtype=np.int64)
        ids[order] = np.cumsum(changed)
    return ids, int(ids.max()) + 1
