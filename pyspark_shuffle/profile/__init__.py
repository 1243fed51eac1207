"""Where executors' CPU goes, stage by stage: the profiles the plugin's stage profiler
(``configure(profile_dir=...)``, ``bench --profile``) writes, read back (:mod:`.segments`),
summed by phase of the shuffle (:mod:`.phases`) and drawn as flame graphs (:mod:`.flamegraph`)."""

from .flamegraph import flamegraph_page
from .phases import PHASES, phase_of, phase_seconds
from .segments import Segment, Stacks, read_segments, stacks_by_kind

__all__ = [
    "PHASES",
    "Segment",
    "Stacks",
    "flamegraph_page",
    "phase_of",
    "phase_seconds",
    "read_segments",
    "stacks_by_kind",
]
