"""Test-suite set-up that must happen before Numba is imported.

CUDA tests run on the Numba CUDA simulator unless told otherwise: set
`NUMBA_ENABLE_CUDASIM=0` on a machine with a GPU to run them on the device.
"""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
