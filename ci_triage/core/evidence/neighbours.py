"""What a failure's own message says about other processes on the same device.

PyTorch's CUDA out-of-memory message lists the other processes holding memory on the GPU
("Process 2231188 has 40.00 GiB memory in use"), before its own ("this process has ..."). A
neighbour named there is contention evidence straight from the log, even when no overlapping job
was found (the neighbour may not be a CI job at all).
"""

from __future__ import annotations

import re

# torch/csrc/cuda (c10) OOM message, PyTorch >= 2.1; NPU builds (torch_npu) print the same shape.
_OTHER_PROCESS = re.compile(r"(?<!this )\bProcess (?P<pid>\d+) has (?P<memory>[\d.]+ [KMGT]iB) memory in use")


def neighbour_hints(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(f"process {m.group('pid')} held {m.group('memory')} on the device"
                 for m in _OTHER_PROCESS.finditer(text))
