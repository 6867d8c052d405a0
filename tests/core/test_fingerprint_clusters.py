from ci_triage.core.logs.clusters import cluster
from ci_triage.core.logs.fingerprint import fingerprint, normalise_with_values
from ci_triage.model import StoredFailure


def test_masks_keep_their_values():
    text, masked = normalise_with_values(
        "2024-01-01T10:00:00.123Z worker pid=4312 crashed at 0x7ffd1234 in /tmp/pytest-of-root/p-3/x.py "
        "req 123e4567-e89b-12d3-a456-426614174000 sha deadbeefcafe1234 to 10.0.0.5:29500 port: 35191")
    assert text == "<ts> worker pid <pid> crashed at <hex> in <tmp> req <uuid> sha <hex> to <addr> port <port>"
    assert masked["port"] == ["35191"] and masked["address"] == ["10.0.0.5:29500"] and masked["pid"] == ["4312"]


def test_fingerprint_is_stable_across_volatile_values_but_not_across_meaning():
    a = fingerprint("unknown", "Worker 12 died: connection to 10.1.2.3:4000 lost at 2024-01-01T00:00:00Z")
    b = fingerprint("unknown", "Worker 7 died: connection to 10.9.9.9:5000 lost at 2025-02-02T11:11:11Z")
    c = fingerprint("unknown", "Worker 7 finished: connection to 10.9.9.9:5000 closed")
    assert a == b != c
    assert a.startswith("v1:")
    assert fingerprint("network", "x") != fingerprint("unknown", "x")


def _failure(job_id: int, fp: str, pr: int | None, at: str) -> StoredFailure:
    return StoredFailure("o/r", job_id, job_id * 10, pr, "job", "wf", "unknown", None, fp, f"boom {job_id}", at,
                         f"https://example/{job_id}")


def test_clusters_count_prs_and_first_last_seen():
    found = cluster([_failure(1, "v1:a", 66, "2026-05-12T10:00:00Z"), _failure(2, "v1:b", 67, "2026-05-12T11:00:00Z"),
                     _failure(3, "v1:a", 68, "2026-05-12T12:00:00Z"), _failure(4, "v1:a", 66, "2026-05-12T13:00:00Z")])
    assert [(c.fingerprint, c.count, c.prs) for c in found] == [("v1:a", 3, (66, 68)), ("v1:b", 1, (67,))]
    assert (found[0].first_seen, found[0].last_seen, found[0].sample) == (
        "2026-05-12T10:00:00Z", "2026-05-12T13:00:00Z", "boom 4")


def test_a_megabyte_long_root_cause_line_is_fingerprinted_by_its_start():
    head = "RuntimeError: worker 3 failed after "
    huge = head + "12 " * 2_000_000  # 6 MB of numbers on one line: a mask entry each, unclipped
    assert fingerprint("crash", huge) == fingerprint("crash", huge[:2048])
    assert fingerprint("crash", huge) != fingerprint("crash", "RuntimeError: something else entirely")
