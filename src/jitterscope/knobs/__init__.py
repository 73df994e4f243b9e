"""The one system-knob layer: read a knob, normalise its value, write it through the journal, re-read it.

Used by `doe`'s factors and by `tune` (audit, apply, revert), so a knob is read,
compared and changed the same way everywhere.

base      FileKnob (a sysctl or sysfs file), canonical values, the journalled write
registry  the named knobs and `resolve(name)`
irq       IRQs: handlers, affinity, effective CPU, movability; irq.N.affinity, irq.*.affinity
tasks     threads: allowed CPUs, movability; task.PID.affinity, moving every task away
"""

from jitterscope.knobs.base import FileKnob, canonical
from jitterscope.knobs.registry import FILE_KNOBS, Knob, known_names, resolve

__all__ = ["FILE_KNOBS", "FileKnob", "Knob", "canonical", "known_names", "resolve"]
