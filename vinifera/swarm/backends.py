"""Where swarm nodes run: each backend gives a slot an address and starts,
stops, kills (and, where it can, cuts off) the node behind it. Every node is
the same `vinifera-node run` command; only its surroundings differ."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from vinifera.errors import ViniferaError

NODE_PORT = 7000


class BackendError(ViniferaError):
    """A backend cannot run here (missing tool or privilege) or failed to set up."""


def node_command() -> list[str]:
    script = Path(sys.executable).with_name("vinifera-node")
    return [str(script)] if script.exists() else [sys.executable, "-m", "vinifera.cli.node"]


def _run(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(args, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise BackendError(f"{' '.join(args)} failed: {out.stderr.strip() or out.returncode}")
    return out


def free_port(host: str = "127.1.0.1") -> int:
    """A port free for UDP and TCP on host now (the kernel's pick)."""
    for _ in range(20):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind((host, 0))
            port = udp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind((host, port))
                except OSError:
                    continue
            return port
    raise BackendError(f"no free port on {host}")


class ProcessBackend:
    """Each node a process on its own loopback address 127.1.x.y, all on one
    port picked free when the swarm starts: two swarms on one machine (two
    users, or two test runs) do not collide."""

    name = "process"

    def __init__(self, sockets: Path, port: int | None = None) -> None:
        self.sockets = sockets
        self.port = port
        self.procs: dict[int, subprocess.Popen] = {}

    def address(self, slot: int) -> str:
        if self.port is None:
            self.port = free_port()
        return f"127.1.{slot // 250}.{slot % 250 + 1}:{self.port}"

    def control(self, slot: int) -> str:
        return str(self.sockets / f"n{slot}.sock")

    def prepare(self, slots: int) -> None:
        pass

    def wrap(self, slot: int, args: list[str]) -> list[str]:
        return args

    def start(self, slot: int, args: list[str], out: Path, err: Path) -> None:
        with open(out, "a") as o, open(err, "a") as e:
            self.procs[slot] = subprocess.Popen(
                self.wrap(slot, [*node_command(), *args]), stdout=o, stderr=e,
                start_new_session=True,  # Ctrl-C on the runner must not reach the nodes first
            )  # fmt: skip

    def running(self, slot: int) -> bool:
        p = self.procs.get(slot)
        return p is not None and p.poll() is None

    def pid(self, slot: int) -> int | None:
        p = self.procs.get(slot)
        return None if p is None else p.pid

    def exit_code(self, slot: int) -> int | None:
        """The exit status of a node that ended (negative: killed by that signal)."""
        p = self.procs.get(slot)
        return None if p is None else p.poll()

    def forget(self, slot: int) -> None:
        """A node that ended by itself: nothing left to stop."""
        self.procs.pop(slot, None)

    def stop(self, slot: int, kill: bool = False, timeout: float = 10.0) -> None:
        self.stop_many([slot], kill, timeout)

    def stop_many(self, slots: list[int], kill: bool = False, timeout: float = 10.0) -> None:
        """Signal them all, then wait: nodes leave in parallel."""
        procs = [p for p in (self.procs.pop(s, None) for s in slots) if p and p.poll() is None]
        for p in procs:
            p.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def cut(self, slot: int) -> None:
        raise BackendError("the process backend cannot cut a host off (use --backend netns)")

    def teardown(self) -> None:
        self.stop_many(list(self.procs))


class NetnsBackend(ProcessBackend):
    """Each node a host in its own network namespace, on one bridge
    (10.77.0.0/16). Needs root; set up and torn down here. Loss is random
    drop of incoming packets (iptables' statistic match): no netem here."""

    name = "netns"
    BRIDGE = "vnfbr0"

    def __init__(self, sockets: Path, loss: float = 0.0, tag: str | None = None) -> None:
        super().__init__(sockets)
        self.loss = loss
        self.tag = tag or f"{os.getpid() % 10000}"
        self.made: list[int] = []
        if os.geteuid() != 0:
            raise BackendError("the netns backend needs root (network namespaces, veth, bridge)")
        if shutil.which("ip") is None:
            raise BackendError("the netns backend needs `ip`: apt-get install iproute2")
        if loss and shutil.which("iptables") is None:
            raise BackendError(
                "--loss drops datagrams with iptables' statistic match, and `iptables` is not "
                "installed: apt-get install iptables (Debian/Ubuntu), then run again"
            )

    def ns(self, slot: int) -> str:
        return f"vnf{self.tag}n{slot}"

    def veth(self, slot: int) -> str:
        return f"vh{self.tag}x{slot}"[:15]  # interface names are at most 15 bytes

    def address(self, slot: int) -> str:
        return f"10.77.{slot // 250}.{slot % 250 + 2}:{NODE_PORT}"

    def prepare(self, slots: int) -> None:
        br = self.BRIDGE
        if _run(["ip", "link", "show", br], check=False).returncode != 0:
            _run(["ip", "link", "add", br, "type", "bridge"])
            _run(["ip", "addr", "add", "10.77.255.254/16", "dev", br])
            _run(["ip", "link", "set", br, "up"])
        for slot in range(slots):
            ns, veth = self.ns(slot), self.veth(slot)
            host = self.address(slot).rsplit(":", 1)[0]
            _run(["ip", "netns", "add", ns])
            self.made.append(slot)
            _run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
            _run(["ip", "link", "set", veth, "master", br, "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{host}/16", "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            if self.loss:
                _run(["ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-p", "udp", "-m",
                      "statistic", "--mode", "random", "--probability", str(self.loss),
                      "-j", "DROP"])  # fmt: skip

    def wrap(self, slot: int, args: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns(slot), *args]

    def cut(self, slot: int) -> None:
        _run(["ip", "link", "set", self.veth(slot), "down"])

    def teardown(self) -> None:
        super().teardown()
        for slot in self.made:
            _run(["ip", "link", "del", self.veth(slot)], check=False)
            _run(["ip", "netns", "del", self.ns(slot)], check=False)
        self.made.clear()
        # the bridge goes with the last swarm using it
        if not any(n.startswith("vnf") for n in _run(["ip", "netns", "list"]).stdout.split()):
            _run(["ip", "link", "del", self.BRIDGE], check=False)


class ContainerBackend(ProcessBackend):
    """Each node a container of the project's image on a user-defined
    network (10.78.0.0/16), through the `docker` CLI or podman. The log
    folder is mounted at /swarm so logs and control sockets land there."""

    name = "docker"
    NETWORK = "vinifera-swarm"

    def __init__(self, sockets: Path, image: str, engine: str | None = None) -> None:
        super().__init__(sockets)
        self.image = image
        # A docker client without an engine is common; podman needs none.
        engine = engine or os.environ.get("VINIFERA_CONTAINER_ENGINE")
        self.engine = engine or shutil.which("podman") or shutil.which("docker")
        if self.engine is None:
            raise BackendError("the docker backend needs `podman` or `docker` on PATH")
        self.names: dict[int, str] = {}

    def address(self, slot: int) -> str:
        return f"10.78.{slot // 250}.{slot % 250 + 2}:{NODE_PORT}"

    def prepare(self, slots: int) -> None:
        # the image runs as an unprivileged user: let it write logs and sockets here
        os.chmod(self.sockets, 0o1777)
        if _run([self.engine, "network", "inspect", self.NETWORK], check=False).returncode:
            _run([self.engine, "network", "create", "--subnet", "10.78.0.0/16", self.NETWORK])

    def start(self, slot: int, args: list[str], out: Path, err: Path) -> None:
        name = self.names[slot] = f"vinifera-{os.getpid()}-{slot}"
        host = self.address(slot).rsplit(":", 1)[0]
        # paths inside the container: the socket folder is mounted at /swarm
        inner = [a.replace(str(self.sockets), "/swarm") for a in args]
        docker = [self.engine, "run", "--rm", "--name", name, "--network", self.NETWORK,
                  "--ip", host, "-v", f"{self.sockets}:/swarm", self.image,
                  "vinifera-node", *inner]  # fmt: skip
        with open(out, "a") as o, open(err, "a") as e:
            self.procs[slot] = subprocess.Popen(docker, stdout=o, stderr=e, start_new_session=True)

    def forget(self, slot: int) -> None:
        self.names.pop(slot, None)
        super().forget(slot)

    def stop_many(self, slots: list[int], kill: bool = False, timeout: float = 10.0) -> None:
        names = [n for n in (self.names.pop(s, None) for s in slots) if n]
        if names:
            _run([self.engine, "kill" if kill else "stop", *names], check=False)
        super().stop_many(slots, kill, timeout)
