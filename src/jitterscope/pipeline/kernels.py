"""The box kernels compiled into the runtime: their ports, footprints, parameters and cost.

Every kernel computes the output rows [row0, row1) of its sub-box from whole
input images, so a box split into row sub-boxes computes exactly what the
whole box computes (the arithmetic is identical, hence bit-identical outputs).
The numbers here must match `native/pipeline_kernels.h` (ids, parameter
order); `tests/unit/test_pipeline_kernels.py` recomputes each kernel with
numpy and compares with the runtime.

Footprint of an input port: `[w, h]` pixels around each output pixel (the
thesis's `mul [1, 1] [4, 4]`); `[1, 1]` is pointwise.  Rows y - h//2 ..
y + (h-1)//2 are read (clamped to the image), so a 4x4 convolution reads two
rows above and one below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

# Kernel ids shared with native/pipeline_kernels.h (JS_K_*).
KERNEL_IDS = {"source": 1, "sink": 2, "dup": 3, "gain": 4, "add": 5, "average": 6, "copy": 7, "conv": 8, "user": 9}
PIXEL_TYPES = {"int32": 0, "float32": 1}
PIXEL_ALIASES = {"int": "int32", "float": "float32"}
PIXEL_BYTES = 4
MAX_PORTS = 8  # inputs or outputs of one box (JS_MAX_PORTS)
MAX_PARAMS = 8  # int64 parameters of one box (JS_MAX_PARAMS), conv weights excepted
MAX_CONV = 15  # largest convolution size
GAIN_DEFAULT = (3, 1)  # factor, offset

# Relative cost per output pixel, used as a box's weight when the graph gives no timing.
_COST = {"source": 8.0, "sink": 2.0, "dup": 2.0, "gain": 1.0, "add": 1.5, "copy": 1.0, "user": 2.0}


@dataclass(frozen=True)
class Port:
    name: str
    footprint: tuple[int, int] = (1, 1)  # (w, h)

    @property
    def halo(self) -> tuple[int, int]:
        """Rows read above and below an output row."""
        h = self.footprint[1]
        return h // 2, (h - 1) // 2


@dataclass
class KernelSpec:
    """What a box's kernel is: ports, whether it may be split, and its int64 parameters."""

    kernel: str
    inputs: list[Port]
    outputs: list[Port]
    parallel: bool
    params: list[int] = field(default_factory=list)
    conv: list[int] = field(default_factory=list)  # conv weights (row-major size x size) then divisor
    fparams: list[float] = field(default_factory=list)  # float32 images: gain factor, offset
    library: str | None = None
    symbol: str | None = None

    def cost(self, pixels: int) -> float:
        if self.kernel == "conv":
            n = self.inputs[0].footprint
            return float(pixels) * n[0] * n[1]
        if self.kernel == "average":
            return float(pixels) * (1 + 0.5 * len(self.inputs))
        return float(pixels) * _COST[self.kernel]


class KernelOptions(TypedDict, total=False):
    """A built-in box's options that shape its ports."""

    size: int  # conv: its kernel is size x size
    inputs: int  # add, average
    outputs: int  # dup


def default_parallel(kernel: str) -> bool:
    return kernel not in ("source", "sink")


def builtin_ports(kernel: str, opts: KernelOptions) -> tuple[list[Port], list[Port]]:
    """A built-in kernel's ports given its options (size, inputs, outputs)."""
    if kernel == "source":
        return [], [Port("out")]
    if kernel == "sink":
        return [Port("in")], []
    if kernel in ("gain", "copy"):
        return [Port("in")], [Port("out")]
    if kernel == "conv":
        n = int(opts.get("size", 3))
        return [Port("in", (n, n))], [Port("out")]
    if kernel in ("add", "average"):
        k = int(opts.get("inputs", 2))
        return [Port(f"in{i}") for i in range(k)], [Port("out")]
    if kernel == "dup":
        k = int(opts.get("outputs", 2))
        return [Port("in")], [Port(f"out{i}") for i in range(k)]
    raise KeyError(kernel)


# Options each kernel takes (beyond kernel, parallel, weight, inputs, outputs).
KERNEL_OPTIONS: dict[str, set[str]] = {
    "source": set(),
    "sink": set(),
    "copy": set(),
    "gain": {"factor", "offset"},
    "conv": {"size", "weights", "divisor"},
    "add": set(),
    "average": set(),
    "dup": set(),
    "user": {"library", "symbol", "params"},
}
# Kernels whose port count is an option.
COUNTED = {"add": "inputs", "average": "inputs", "dup": "outputs"}
