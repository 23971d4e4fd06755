"""The Dask engine of `grader batch`: a cluster that only the grader can talk to.

    engine = Engine(workers=4)                       # or Engine(scheduler, security=...)
    print(engine.start(sandbox="auto", allow_shared_network=False))
    future = engine.submit(job)
    done = engine.wait_any(futures, seconds=2.0)    # [] when none finished meanwhile
    engine.alive_threads()                          # 0: every worker is gone

**Why TLS on a machine of its own.** A Dask scheduler runs whatever pickled function a
client sends it, and a plain ``tcp://`` scheduler takes any client that connects: on
loopback, any process of the machine. Student code that can reach the scheduler's port (the
``uid`` tier where the container forbids a private network, or the ``process`` tier) could
run code in the batch parent, as root, and rewrite its own gradebook row. So:

* the local cluster listens on 127.0.0.1 with TLS and *mutual* authentication: its key and
  certificate are made for this batch (`distributed.security.Security.temporary`), held in
  the memory of the parent and handed to the worker processes it spawns (Dask writes them
  to a root-only temporary folder for the moment it loads them). A process that finds the
  port cannot complete a handshake, let alone submit;
* ``--scheduler ADDRESS`` needs a security configuration (`scheduler_security`: the three
  TLS files, or a Dask config that requires encryption), or the explicit
  ``--insecure-scheduler`` of a network only the grader reaches;
* at the start every worker must run this grader (`grader_version`) and give student code a
  private network, or the instructor opts in with ``--allow-shared-network``
  (`shared_network_reason`).

The parent watches the workers while it waits (`alive_threads`): `grader.batch.run` ends the
batch when none is left for a grace period, instead of waiting forever.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any, Optional

from .gradebook import grader_version

__all__ = ["Engine", "shared_network_reason", "scheduler_security"]

#: The option that grades with student code on the grader's network anyway.
SHARED_NETWORK_FLAG = "--allow-shared-network"


def shared_network_reason(sandbox: str) -> str:
    """'' when the tier that `sandbox` picks here gives student code a network of its own;
    else why it does not (student code could then reach the grader's loopback services).

    Raises:
        grader.sandbox.tiers.SandboxUnavailable: the tier asked for cannot run here.
    """
    from grader.sandbox.tiers import choose_tier, private_network

    tier = choose_tier(sandbox)
    if tier == "process":
        return "the process tier runs student code as the grader's own user, on the grader's network"
    if tier == "uid" and not private_network():
        return (
            "the uid tier has no private network on this machine (it forbids namespaces): student code "
            "shares the grader's network and can connect to its loopback services"
        )
    return ""


def scheduler_security(
    address: str,
    ca_file: Optional[str] = None,
    cert: Optional[str] = None,
    key: Optional[str] = None,
    insecure: bool = False,
) -> Any:
    """The `distributed.security.Security` to reach the scheduler at `address` with: the
    three TLS files, else Dask's configuration when it requires encryption; None with
    `insecure` (the instructor's explicit choice for a network only the grader reaches).

    Raises:
        ValueError: no security configuration and not `insecure`, an incomplete one, or a
            TLS configuration with a non-``tls://`` address.
    """
    from distributed.security import Security

    files = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if insecure:
        if any(files.values()):
            raise ValueError("--insecure-scheduler and the --tls-* options exclude each other")
        return None
    if any(files.values()):
        missing = [name for name, value in files.items() if not value]
        if missing:
            raise ValueError(
                f"--scheduler with TLS needs --tls-ca-file, --tls-cert and --tls-key (missing {', '.join(missing)})"
            )
        security = Security(
            tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key, require_encryption=True
        )
    else:
        security = Security()  # Dask's configuration (~/.config/dask, DASK_* variables)
        tls = security.get_tls_config_for_role("client")
        if not (security.require_encryption and tls.get("ca_file") and tls.get("cert")):
            raise ValueError(
                f"--scheduler {address}: a Dask scheduler runs any code that a client sends it, so grader batch "
                "talks to one only over TLS with mutual authentication. Give --tls-ca-file, --tls-cert and --tls-key "
                "(the cluster's CA and a client certificate and key), or set distributed.comm.require-encryption and "
                "distributed.comm.tls.* in Dask's configuration; on a network that only the grader can reach, "
                "--insecure-scheduler connects without it"
            )
    if not address.startswith("tls://"):
        raise ValueError(f"--scheduler {address}: with TLS the address starts with tls:// (tls://HOST:8786)")
    return security


class Engine:
    """Dask distributed: a LocalCluster of `workers` single-threaded processes (default:
    one per core) with TLS and mutual authentication, or the running cluster at
    `scheduler` (reached with `security`; None only with ``--insecure-scheduler``)."""

    def __init__(
        self, scheduler: Optional[str] = None, workers: Optional[int] = None, security: Any = None
    ) -> None:
        self.scheduler, self.workers, self.security = scheduler, workers, security
        self.client: Any = None
        self.cluster: Any = None

    def start(self, sandbox: str = "auto", allow_shared_network: bool = False) -> str:
        """Start (or connect); check every worker's grader version and network; describe
        the engine.

        Raises:
            RuntimeError: a worker runs another version of the grader, cannot run it, or
                would grade on a shared network without `allow_shared_network`.
        """
        from distributed import Client, LocalCluster
        from distributed.security import Security

        if self.scheduler:
            self.client = Client(self.scheduler, timeout=60, security=self.security)
        else:
            self.security = Security.temporary()
            self.cluster = LocalCluster(
                n_workers=self.workers or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
                host="127.0.0.1",
                protocol="tls://",
                security=self.security,
            )
            self.client = Client(self.cluster, security=self.security)
        try:
            self._check_workers(sandbox, allow_shared_network)
        except RuntimeError:
            self.close()
            raise
        where = self.scheduler or "a local cluster"
        how = (
            "TLS, mutual authentication"
            if self.security is not None
            else "NO authentication (--insecure-scheduler)"
        )
        return f"{where} ({how}): {len(self.client.nthreads())} workers, {self.threads()} threads"

    def _check_workers(self, sandbox: str, allow_shared_network: bool) -> None:
        mine = grader_version()
        theirs = self._run_on_workers(grader_version)
        wrong = {addr: v for addr, v in theirs.items() if v != mine}
        if wrong:
            listed = ", ".join(f"{a} has {v}" for a, v in sorted(wrong.items()))
            raise RuntimeError(
                f"the workers must run this grader ({mine}): {listed}; install the same kit on them"
            )
        networks = (
            self._run_on_workers(shared_network_reason, sandbox) if self.scheduler else {}
        )  # local: checked before
        shared = {addr: why for addr, why in networks.items() if why}
        if shared and not allow_shared_network:
            addr, why = sorted(shared.items())[0]
            raise RuntimeError(f"worker {addr}: {why}; refusing to grade there without {SHARED_NETWORK_FLAG}")

    def _run_on_workers(self, function: Any, *args: Any) -> dict[str, Any]:
        try:
            return self.client.run(function, *args)
        except Exception as exc:  # noqa: BLE001 - e.g. a worker without the kit installed, or without the jail
            raise RuntimeError(
                f"the workers cannot run the grader ({type(exc).__name__}: {exc}); install the kit on them"
            ) from None

    def threads(self) -> int:
        return sum(self.client.nthreads().values())

    def alive_threads(self) -> int:
        """The worker threads the scheduler has now (0 when it cannot be asked)."""
        try:
            if self.client.status != "running":
                return 0
            return sum(self.client.nthreads().values())
        except Exception:  # noqa: BLE001 - a scheduler that went away has no workers
            return 0

    def submit(self, job: dict[str, Any], worker: Optional[str] = None) -> Any:
        """A future of `grade_job(job)` (on `worker` when given)."""
        from .worker import grade_job

        key = f"grade-{job['student']}-{uuid.uuid4().hex[:8]}"
        return self.client.submit(grade_job, job, key=key, pure=False, workers=[worker] if worker else None)

    def wait_any(self, futures: list[Any], seconds: float) -> list[Any]:
        """The futures of `futures` that are done, waiting up to `seconds` for a first one."""
        from distributed import wait

        try:
            done, _ = wait(futures, timeout=seconds, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        return list(done)

    def cancel(self, futures: list[Any]) -> None:
        """Forget `futures` (a batch that ends early leaves nothing queued on a shared cluster)."""
        try:
            self.client.cancel(futures)
        except Exception:  # noqa: BLE001 - the scheduler may be gone already
            pass

    def close(self) -> None:
        for part in (self.client, self.cluster):
            if part is not None:
                try:
                    part.close()
                except Exception:  # noqa: BLE001 - closing after an interrupt: best effort
                    pass
        self.client = self.cluster = None
