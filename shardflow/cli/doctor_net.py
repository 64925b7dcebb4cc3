"""Network checks of ``shardflow doctor``: interfaces, the interface to use, ports, ssh.

* **Interfaces** (:func:`interfaces`): every entry of ``/sys/class/net`` with its IPv4
  address and a *kind*: ``loopback``; ``physical`` (it has a ``device`` link: a NIC);
  ``virtual`` (under ``/sys/devices/virtual``: veth pairs, docker/bridge, tun/tap, ifb,
  vxlan ...). A container's ``eth0`` is usually one end of a veth pair; that is fine inside
  the container, but Open MPI and NCCL pick *every* usable interface by default, and a
  docker bridge (``docker0``, ``br-*``) or a VPN that does not reach the other hosts makes
  a multi-host job hang at its first collective.
* **Which interface** (:func:`route_interface`): the one whose IPv4 network contains a
  host's address. The doctor suggests it as ``OMPI_MCA_btl_tcp_if_include=IF`` (Open MPI's
  TCP transport) and ``NCCL_SOCKET_IFNAME=IF`` (NCCL's bootstrap), and reports a FAIL when
  one of those variables names an interface that does not exist here or does not reach a
  host of ``--hosts`` (:func:`check_if_setting`).
* **Ports** (:func:`port_free`, :func:`port_open`): ``MASTER_PORT`` free locally; the ssh
  port (22) of each remote host reachable.
* **ssh** (:func:`ssh_check`): ``ssh -o BatchMode=yes HOST true`` (no password prompt may
  appear: mpiexec starts remote ranks through ssh). The agent is Open MPI's
  (``OMPI_MCA_plm_rsh_agent`` / ``PRTE_MCA_plm_ssh_agent`` when set, else ``ssh``).
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import shlex
import socket
import struct
import subprocess
from dataclasses import dataclass

from .. import _config

SYSFS_NET = "/sys/class/net"
_VIRTUAL_HINTS = (("veth", "veth pair (container link)"), ("docker", "docker bridge"),
                  ("br-", "bridge"), ("virbr", "libvirt bridge"), ("cni", "CNI bridge"),
                  ("flannel", "overlay"), ("cali", "calico"), ("vxlan", "overlay"),
                  ("tun", "tunnel/VPN"), ("tap", "tap"), ("wg", "WireGuard VPN"),
                  ("ifb", "traffic-shaping (ifb)"), ("dummy", "dummy"))
_SIOCGIFADDR, _SIOCGIFNETMASK = 0x8915, 0x891B


@dataclass
class Interface:
    name: str
    kind: str  # loopback | physical | virtual
    what: str  # e.g. "veth pair (container link)"
    up: bool
    network: ipaddress.IPv4Interface | None  # address/prefix, None without IPv4

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "what": self.what, "up": self.up,
                "ipv4": str(self.network) if self.network else None}


def _ipv4(name: str) -> ipaddress.IPv4Interface | None:
    """The IPv4 address/netmask of interface ``name`` (ioctl; None if it has none)."""
    packed = struct.pack("256s", name.encode()[:15])
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            addr = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, packed)[20:24]
            mask = fcntl.ioctl(s.fileno(), _SIOCGIFNETMASK, packed)[20:24]
    except OSError:
        return None
    return ipaddress.IPv4Interface(f"{socket.inet_ntoa(addr)}/{socket.inet_ntoa(mask)}")


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def classify(name: str, sysfs_path: str, has_device: bool) -> tuple[str, str]:
    """(kind, description) of an interface from its name and sysfs entry."""
    if name == "lo" or _read(os.path.join(sysfs_path, "type")) == "772":
        return "loopback", "loopback"
    virtual = not has_device or "/virtual/" in os.path.realpath(sysfs_path)
    for prefix, what in _VIRTUAL_HINTS:
        if name.startswith(prefix):
            return "virtual", what
    if virtual:
        return "virtual", "virtual (veth end or bridge, e.g. a container's eth0)"
    return "physical", "NIC"


def interfaces(sysfs: str = SYSFS_NET, addresses=None) -> list[Interface]:
    """Every network interface (see the module docstring). ``addresses`` (name -> "a.b.c.d/p")
    replaces the ioctl lookup (tests)."""
    out = []
    try:
        names = sorted(os.listdir(sysfs))
    except OSError:
        return out
    for name in names:
        path = os.path.join(sysfs, name)
        kind, what = classify(name, path, os.path.exists(os.path.join(path, "device")))
        state = _read(os.path.join(path, "operstate"))
        up = state in ("up", "unknown") or kind == "loopback"
        if addresses is not None:
            net = ipaddress.IPv4Interface(addresses[name]) if addresses.get(name) else None
        else:
            net = _ipv4(name)
        out.append(Interface(name, kind, what, up, net))
    return out


def resolve(host: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(socket.gethostbyname(host))
    except (OSError, ValueError):
        return None


def parse_hosts(hosts: str | None) -> list[str]:
    """``h1:4,h2:4`` -> ``["h1", "h2"]`` (order kept, duplicates dropped)."""
    out: list[str] = []
    for item in (hosts or "").split(","):
        name = item.split(":")[0].strip()
        if name and name not in out:
            out.append(name)
    return out


def is_local(host: str, ifaces: list[Interface]) -> bool:
    if host in ("localhost", socket.gethostname(), socket.getfqdn()):
        return True
    ip = resolve(host)
    return ip is not None and (ip.is_loopback or any(i.network and i.network.ip == ip
                                                     for i in ifaces))


def route_interface(ip: ipaddress.IPv4Address, ifaces: list[Interface]) -> Interface | None:
    """The interface whose IPv4 network contains ``ip`` (the most specific one)."""
    best = None
    for i in ifaces:
        if i.network and ip in i.network.network:
            if best is None or i.network.network.prefixlen > best.network.network.prefixlen:
                best = i
    return best


def suggest_interface(ifaces: list[Interface], host_ips) -> list[str]:
    """Interfaces to name in btl_tcp_if_include / NCCL_SOCKET_IFNAME: those reaching the
    hosts; with no remote host, the up non-loopback interfaces, physical ones first."""
    names: list[str] = []
    for ip in host_ips:
        i = route_interface(ip, ifaces)
        if i is not None and i.name not in names:
            names.append(i.name)
    if names or host_ips:
        return names
    cands = [i for i in ifaces if i.kind != "loopback" and i.up and i.network]
    cands.sort(key=lambda i: i.kind != "physical")
    return [cands[0].name] if cands else []


def _if_names(var: str, value: str) -> list[str]:
    """Interface names listed by ``btl_tcp_if_include`` (names or CIDRs, comma list) or
    ``NCCL_SOCKET_IFNAME`` (prefixes, ``^`` excludes, ``=`` exact)."""
    if var == "NCCL_SOCKET_IFNAME":
        if value.startswith("^"):
            return []
        value = value.lstrip("=")
    return [v.strip() for v in value.split(",") if v.strip() and "/" not in v]


def suggest_value(var: str, ifaces: list[Interface], host_ips) -> str | None:
    """The value to suggest for ``var``: for Open MPI with remote hosts, the subnets in CIDR
    form (valid on every host whatever its interface names); else interface names."""
    good = suggest_interface(ifaces, host_ips)
    if not good:
        return None
    if var == "OMPI_MCA_btl_tcp_if_include" and host_ips:
        nets = [str(i.network.network) for i in ifaces if i.name in good and i.network]
        return ",".join(dict.fromkeys(nets))
    return ",".join(good)


def check_if_setting(var: str, value: str, ifaces: list[Interface], host_ips,
                     remote_ifaces: dict[str, list[str]] | None = None) -> str | None:
    """Why ``var=value`` cannot work (a message with the fix), or None if it can.

    Checked: the names exist here and on every remote host (``remote_ifaces``: host ->
    interface names; mpiexec passes the same value to every host), and the selected
    interfaces (or CIDR subnets) reach every host of ``host_ips``."""
    good = suggest_value(var, ifaces, host_ips)
    fix = f"set {var}={good}" if good else f"unset {var}"
    cidrs = []
    if var == "OMPI_MCA_btl_tcp_if_include":
        for v in value.split(","):
            if "/" in v:
                try:
                    cidrs.append(ipaddress.IPv4Network(v.strip(), strict=False))
                except ValueError:
                    return f"{var}={value}: {v!r} is neither an interface name nor a subnet; fix: {fix}"
    names = _if_names(var, value)
    prefix = var == "NCCL_SOCKET_IFNAME" and not value.startswith("=")

    def matches(name):
        return any(name == n or (prefix and name.startswith(n)) for n in names)

    for host, remote in (remote_ifaces or {}).items():
        if names and not any(matches(r) for r in remote):
            return (f"{var}={value} names no interface of host {host} (its interfaces: "
                    f"{', '.join(remote)}); mpiexec gives every host the same value; fix: {fix}")
    if not names:
        unreached = [str(ip) for ip in host_ips if cidrs and not ip.is_loopback
                     and not any(ip in c for c in cidrs)]
        if unreached:
            return f"{var}={value}: no subnet listed contains {', '.join(unreached)}; fix: {fix}"
        return None
    known = {i.name: i for i in ifaces}
    chosen = [i for i in ifaces if matches(i.name)]
    listing = ", ".join(f"{i.name} ({i.network or 'no IPv4'})" for i in ifaces)
    if not chosen:
        missing = [n for n in names if n not in known]
        return (f"{var}={value} names {', '.join(missing) or value}, which does not exist on "
                f"this host (interfaces: {listing}); fix: {fix}")
    unreached = [str(ip) for ip in host_ips if not ip.is_loopback
                 and not any(i.network and ip in i.network.network for i in chosen)
                 and not any(ip in c for c in cidrs)]
    if unreached:
        return (f"{var}={value}: no interface it selects reaches {', '.join(unreached)} "
                f"(selected: {', '.join(f'{i.name} ({i.network})' for i in chosen)}); "
                f"ranks on the other hosts would wait forever at the first collective; fix: {fix}")
    return None


def port_free(port: int, addr: str = "0.0.0.0") -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
        except OSError:
            return False
    return True


def port_open(host: str, port: int, timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def rsh_agent() -> list[str]:
    """The command Open MPI starts remote daemons with (its ``plm`` ssh agent)."""
    raw = (_config.env("PRTE_MCA_plm_ssh_agent") or _config.env("OMPI_MCA_plm_rsh_agent")
           or "ssh")
    return shlex.split(raw.split(":")[0])


def ssh_run(host: str, argv: list[str], *, stdin: str | None = None, timeout: float = 15.0):
    """Run ``argv`` on ``host`` through the agent, without any password prompt.
    Returns ``(returncode, stdout, stderr)``; returncode 255 / None for no connection."""
    agent = rsh_agent()
    opts = (["-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o",
             "StrictHostKeyChecking=accept-new"] if os.path.basename(agent[0]) == "ssh" else [])
    try:
        p = subprocess.run([*agent, *opts, host, *argv], input=stdin, capture_output=True,
                           text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "", str(e)
    return p.returncode, p.stdout, p.stderr


def ssh_check(host: str) -> tuple[bool, str]:
    rc, _, err = ssh_run(host, ["true"])
    if rc == 0:
        return True, f"{' '.join(rsh_agent())} {host}: no password asked"
    last = (err.strip().splitlines() or ["no output"])[-1]
    return False, (f"`{' '.join(rsh_agent())} {host} true` failed ({last}); mpiexec starts the "
                   f"remote ranks this way: set up keys (ssh-keygen; ssh-copy-id {host}) and "
                   "accept the host key once")
