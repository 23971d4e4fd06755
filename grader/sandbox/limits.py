"""The resource limits of a grading run (`Limits`): one frozen value for every child of the run.

    Limits()                                      # what `grader run` uses by default
    Limits(check_timeout=5.0, sandbox="require")

The child sets its own address-space, CPU-time, file-size and (``uid`` tier) process limits
before any student code runs (`grader/sandbox/child/main.py`); its jail caps its processes and
what it writes (`grader.sandbox.jail`); the parent keeps the deadlines and the output cap
(`grader.sandbox.child_process`, the checks). ``sandbox`` is the ``--sandbox`` request,
answered by `grader.sandbox.tiers.choose_tier`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    """Resource limits of a grading run.

    Attributes:
        check_timeout: wall-clock seconds the child may spend on one check (a check may
            scale it, e.g. for Numba compilation).
        start_timeout: seconds to start a child and import the submission.
        notebook_timeout: seconds for autograding one notebook.
        mem_mb: the child's address-space limit in MiB (0: none).
        output_cap: bytes of the child's stdout/stderr kept (the rest is counted, dropped).
        sandbox: the isolation asked for: "auto" (the best this machine provides),
            "require" (the bubblewrap jail or nothing), or a tier's name (`grader.sandbox.tiers`).
        cpu_s: the child's CPU-time limit in seconds (``RLIMIT_CPU``; a safety net).
        file_mb: the largest file the child may write, in MiB (``RLIMIT_FSIZE``).
        nproc: processes + threads the jail may hold (``bwrap``: a pids cgroup, where the
            host offers one; ``uid``: ``RLIMIT_NPROC`` of the jail's own uid). Numba's CUDA
            simulator runs one thread per GPU thread of a block (up to 1024).
        disk_mb: the most the jail may write in all, in MiB (its home, tmp, work and cache
            folders, its tmpfs, and in the ``uid`` tier its files in the host's shared
            folders); past it the jail is killed and the check charged (0: no cap).
    """

    check_timeout: float = 60.0
    start_timeout: float = 120.0
    notebook_timeout: float = 300.0
    mem_mb: int = 4096
    output_cap: int = 16 * 1024
    sandbox: str = "auto"
    cpu_s: int = 1800
    file_mb: int = 512
    nproc: int = 2048
    disk_mb: int = 1024
