"""A real local Ray cluster for tests: a head and worker nodes, each started with `ray start`.

Each node is a ``ray start --block`` process in a session of its own, so that killing its
process group kills the node (its raylet and its workers) as a lost machine would, and
stopping the cluster touches no other Ray on the machine. Every process gets a token of its
own (``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN``), so nothing outside the test is read or
written. The head has no CPUs: tasks run on the workers only.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalCluster:
    """Nodes started with ``ray start --block``; :meth:`stop` kills them all."""

    env: dict[str, str]
    temp_dir: str
    address: str = ""
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    killed: set[int] = field(default_factory=set)

    @property
    def log(self) -> Any:
        """The nodes' output (in the temporary folder)."""
        return open(Path(self.temp_dir) / f"node{len(self.nodes)}.log", "wb")

    @classmethod
    def start(cls, workers: int, cpus: int = 1) -> LocalCluster:
        """A head (no CPUs) and ``workers`` nodes of ``cpus`` CPUs, all connected."""
        env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0",
            "OMP_NUM_THREADS": "1",
        }
        cluster = cls(env, tempfile.mkdtemp(prefix="bkray"))
        try:
            port = _free_port()
            cluster.address = f"127.0.0.1:{port}"
            head = ["--head", f"--port={port}", "--num-cpus=0"]
            cluster._node([*head, "--node-ip-address=127.0.0.1"])
            cluster._wait(1)
            for _ in range(workers):  # one after the other: a loaded GCS times out
                cluster.add_worker(cpus)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    @property
    def workers(self) -> list[int]:
        """The indices of the worker nodes still alive."""
        return [i for i in range(1, len(self.nodes)) if i not in self.killed]

    def add_worker(self, cpus: int = 1) -> None:
        """Start one more worker node of ``cpus`` CPUs and wait until it is up."""
        self._node(
            [
                f"--address={self.address}",
                f"--num-cpus={cpus}",
                "--node-ip-address=127.0.0.1",
            ]
        )
        self._wait(1 + len(self.workers))

    def _node(self, args: list[str]) -> None:
        command = [RAY, "start", "--block", "--disable-usage-stats", *args]
        if "--head" in args:
            command += [f"--temp-dir={self.temp_dir}", "--include-dashboard=false"]
        self.nodes.append(
            subprocess.Popen(
                command,
                env=self.env,
                stdout=self.log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def _wait(self, alive: int, timeout: float = 120) -> None:
        """Until ``alive`` nodes are up (asked of the head with ``ray status``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for index, node in enumerate(self.nodes):
                if index not in self.killed and node.poll() is not None:
                    logs = sorted(Path(self.temp_dir).glob("node*.log"))
                    tail = "".join(p.read_text(errors="replace")[-2000:] for p in logs)
                    raise RuntimeError(
                        f"a ray node exited with {node.returncode}:\n{tail}"
                    )
            status = subprocess.run(
                [RAY, "status", f"--address={self.address}"],
                env=self.env,
                capture_output=True,
                text=True,
            )
            if status.returncode == 0 and status.stdout.count("node_") >= alive:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the local ray cluster did not get {alive} nodes up")

    def kill_node(self, index: int) -> None:
        """Kill node ``index`` (0: the head) and everything it runs, as a lost machine."""
        node = self.nodes[index]
        self.killed.add(index)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGKILL)
        node.wait(timeout=30)

    def stop(self) -> None:
        """Kill every node (workers first), wait for them, remove the temporary folder."""
        for index in reversed(range(len(self.nodes))):
            self.kill_node(index)
        self.nodes.clear()
        shutil.rmtree(self.temp_dir, ignore_errors=True)
