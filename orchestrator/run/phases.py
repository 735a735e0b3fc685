"""Phase texts from trials to the driver: "generating synthetic data", "decoding 60,000 JPEGs from PATH".

Ray does not forward worker logs here (`ray.init(log_to_driver=False)`), and a trial reports to Tune
only once an epoch is done, so the minute a trial may spend decoding its data set would be silent.
The transport is one tiny named actor, the phase board:

    with phase_board():                         # driver, around tuner.fit()
        ...
    post_phase(trial_id, "building model")      # trial side: fire-and-forget, never raises
    post_phase(trial_id, {"epoch": 1, "step": 40, "steps": 390, "images": 5120, "seconds": 3.1})  # a note
    posts = ray.get(board.since.remote(seq))    # driver side: orchestrator.run.progress polls it

The board is created in the driver's own job namespace (Ray's default, one per ray.init), so two
sweeps on one cluster never see each other's board, and it is pinned to the driver's node with
num_cpus=0, so it takes no trial's resources and lives as long as the driver's node does.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Iterator

BOARD_NAME = "benchctl-phases"
MAX_POSTS = 1000  # the board keeps the latest posts only: a driver that stops polling costs bounded memory
MAX_TEXT = 300  # characters of one phase text (a long path must not make a post heavy)
MAX_NOTE_KEYS = 8  # numbers in one note from within an epoch


class Board:
    """The actor's class (plain, so it is testable without Ray): numbered posts, read by sequence."""

    def __init__(self) -> None:
        self._posts: deque[tuple[int, str, str, float]] = deque(maxlen=MAX_POSTS)
        self._seq = 0

    def post(self, trial_id: str, text: str | dict, at: float) -> None:
        """A phase text, or a note from within an epoch (a small dict of numbers: trainables/train.py)."""
        self._seq += 1
        if isinstance(text, dict):
            text = {str(k): v for k, v in list(text.items())[:MAX_NOTE_KEYS] if isinstance(v, (int, float))}
        else:
            text = str(text)[:MAX_TEXT]
        self._posts.append((self._seq, str(trial_id), text, float(at)))

    def since(self, seq: int) -> list[tuple[int, str, str | dict, float]]:
        """Posts numbered after `seq`, oldest first: (seq, trial_id, text or note, unix time)."""
        return [p for p in self._posts if p[0] > seq]


@contextlib.contextmanager
def phase_board() -> Iterator[object | None]:
    """Create the board on the driver's node for the block, then kill it. Yields its handle, or None
    when Ray would not create it: phases are a convenience, never a reason to fail a sweep."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    board = None
    with contextlib.suppress(Exception):
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        board = (
            ray.remote(Board)
            .options(name=BOARD_NAME, num_cpus=0, scheduling_strategy=here, max_restarts=0)
            .remote()
        )
    try:
        yield board
    finally:
        if board is not None:
            with contextlib.suppress(Exception):
                ray.kill(board)


def post_phase(trial_id: str, text: str | dict) -> None:
    """Tell the driver what trial `trial_id` (benchctl's TrialConfig.trial_id) is doing now.

    Fire-and-forget from any Ray worker of the sweep: it neither waits for the board nor raises;
    outside Ray, or with no board (a library caller's own Tune run), the text is dropped. The board
    is looked up on every call (a few per trial), so no handle outlives the sweep that made it."""
    try:
        import ray

        if ray.is_initialized():
            ray.get_actor(BOARD_NAME).post.remote(trial_id, text, time.time())
    except Exception:  # noqa: BLE001 - a missing or dead board must never reach the trial
        pass
