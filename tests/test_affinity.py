"""trainables.affinity: disjoint cores for trials sharing a host, dead claimants' cores reclaimed."""

import os
import subprocess
import sys

from trainables.affinity import CoreBook, format_cores, parse_cores


def test_format_cores_uses_taskset_ranges():
    assert format_cores([0, 1, 2, 5]) == "0-2,5"
    assert format_cores([3]) == "3" and format_cores([]) == ""
    assert format_cores([7, 6, 9, 10]) == "6-7,9-10"


def test_cores_round_trip_with_the_taskset_notation():
    assert parse_cores("0-2,5") == {0, 1, 2, 5}
    assert parse_cores("7") == {7}
    for cores in ([0, 1, 2, 5], [3], [6, 7, 9, 10]):
        assert parse_cores(format_cores(cores)) == set(cores)


def test_claims_are_disjoint_and_given_back(tmp_path):
    book = CoreBook(tmp_path / "book.json")
    allowed = sorted(os.sched_getaffinity(0))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = book.take(1, pid=other.pid)
        with book.claim(len(allowed) - 1) as mine:
            assert mine is not None and not set(mine) & set(theirs)
            assert os.sched_getaffinity(0) == set(mine)  # this thread now runs only there
        assert os.sched_getaffinity(0) == set(allowed)  # restored afterwards
        with book.claim(len(allowed)) as too_many:  # one core is still held by the other process
            assert too_many is None and os.sched_getaffinity(0) == set(allowed)
    finally:
        other.kill()
        other.wait()
    with book.claim(len(allowed)) as all_cores:  # the dead process's claim is dropped
        assert all_cores == allowed


def test_a_damaged_book_is_rebuilt(tmp_path):
    path = tmp_path / "book.json"
    path.write_text("{not json")
    assert CoreBook(path).take(1) == sorted(os.sched_getaffinity(0))[:1]
