"""One trial as planned: a frozen, typed record carried from the CLI to the trial process.

    plan = expand(spec, alloc)[0]          # orchestrator/plan/matrix.py builds them, one per grid cell
    plan.trial                             # the TrialConfig the trial trains (whole, cpus included)
    plan.resources                         # {"CPU": n} / {"CPU": n, "GPU": 1}: what Ray books
    plan.request()                         # what Tune asks Ray for (a placement group when pinned)
    TrialPlan.from_tune(config)            # the plan a Tune config carries (`tune_config()`)

Ray Tune resolves its param_space into plain dicts, so the plan crosses into Tune serialised
(`{"plan": plan.to_dict()}`, one grid_search value per cell) and is rebuilt once, at the edge, by
whoever reads a Tune config: the trial (tune_glue.tune_trial), the results writer and the progress
display. Everything past that edge reads typed attributes, so a new option is one field here, not
a string key looked up in half a dozen modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.lab.hardware import NODE_ID_LABEL
from orchestrator.plan.spec import Placement, TrialProcess
from trainables.config import START_METHOD, CheckpointPolicy, Device, StartMethod, TrialConfig

TUNE_KEY = "plan"  # the key of a Tune config that holds the plan's to_dict()
INDEX_KEY = "index"  # the other: the plan's place in the sweep's list (matrix.param_space)


@dataclass(frozen=True)
class TrialPlan:
    """Everything one trial needs, decided on the driver before Ray runs it."""

    trial: TrialConfig  # what is trained; trial.cpus is the cores it uses (threads + workers)
    placement: Placement = Placement.exclusive
    trial_process: TrialProcess = TrialProcess.child
    start_method: StartMethod = START_METHOD  # how the child trial process starts (child only)
    reserve: int = 0  # cores booked in Ray beyond trial.cpus and kept idle (exclusive CPU cells)
    node_ids: tuple[str, ...] = ()  # --per-class: the nodes of the trial's hardware class; () = any node
    sweep: str = ""
    checkpoint: CheckpointPolicy | None = CheckpointPolicy()  # after which epochs Tune persists its state
    restore: str | None = None  # a checkpoint an earlier run of the sweep left for this trial (--resume)
    store: str | None = None  # the relay store actor on a cluster (orchestrator/run/relayfs.py)
    storage: str | None = None  # --storage: Tune's storage URI (orchestrator/plan/storage.py), not the relay

    def __post_init__(self) -> None:
        # from_dict hands plain values; coerce them here so that both paths give the same typed plan
        object.__setattr__(self, "placement", Placement(self.placement))
        object.__setattr__(self, "trial_process", TrialProcess(self.trial_process))
        object.__setattr__(self, "start_method", StartMethod(self.start_method))
        object.__setattr__(self, "node_ids", tuple(self.node_ids))
        if isinstance(self.checkpoint, dict):
            object.__setattr__(self, "checkpoint", CheckpointPolicy(**self.checkpoint))

    @property
    def cpus(self) -> int:
        """Cores the trial itself uses (torch threads + DataLoader workers fit inside them)."""
        return self.trial.cpus

    @property
    def pins_cpus(self) -> bool:
        """Whether the trial pins itself to its own cores (partitioned placement)."""
        return self.placement is Placement.partitioned

    @property
    def resources(self) -> dict[str, float]:
        """Ray resources of the trial: `{"CPU": n}` for a cpu cell (the cores it uses plus its idle
        reserve), `{"CPU": n, "GPU": 1}` for a gpu cell; packed: 1 CPU whatever the trial uses."""
        gpu = {"GPU": 1} if self.trial.device is Device.gpu else {}
        if self.placement is Placement.packed:
            return {"CPU": 1, **gpu}
        return {"CPU": self.cpus + self.reserve, **gpu}

    def request(self):
        """What Tune asks Ray for: `resources`, pinned to the class's nodes when the trial has some
        (a placement group whose bundle carries Ray's node-id label selector)."""
        if not self.node_ids:
            return self.resources
        from ray.tune import PlacementGroupFactory

        selector = {NODE_ID_LABEL: f"in({','.join(self.node_ids)})"}
        return PlacementGroupFactory([self.resources], bundle_label_selector=[selector])

    @property
    def where(self) -> str:
        """The trial's column: its hardware class when pinned to one, else its device."""
        return self.trial.hw_class or self.trial.device.value

    def to_dict(self) -> dict:
        return {
            "trial": self.trial.to_dict(),
            "placement": self.placement.value,
            "trial_process": self.trial_process.value,
            "start_method": self.start_method.value,
            "reserve": self.reserve,
            "node_ids": list(self.node_ids),
            "sweep": self.sweep,
            "checkpoint": self.checkpoint.to_dict() if self.checkpoint else None,
            "restore": self.restore,
            "store": self.store,
            "storage": self.storage,
        }

    @classmethod
    def from_dict(cls, d: dict) -> TrialPlan:
        return cls(**{**d, "trial": TrialConfig.from_dict(d["trial"])})

    def tune_config(self) -> dict:
        """The Tune config that carries this plan (what a trial and the callbacks are handed)."""
        return {TUNE_KEY: self.to_dict()}

    @classmethod
    def from_tune(cls, config: dict) -> TrialPlan:
        """The plan a Tune config (`tune_config()`, one value of param_space's grid) carries."""
        return cls.from_dict(config[TUNE_KEY])
