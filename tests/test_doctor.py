"""``shardflow doctor``: bad environment values, JSON report, interface and topology checks,
BLAS threads, version comparison, and the real 2-rank smoke all_reduce."""

import ipaddress
import json
import os
import subprocess
import sys

import pytest

from shardflow.cli import doctor, doctor_gpu, doctor_net, doctor_probe
from shardflow.comm.launcher import rank_env


def _doctor(*args, env=None):
    e = rank_env(env)
    return subprocess.run([sys.executable, "-m", "shardflow", "doctor", *args], env=e,
                          capture_output=True, text=True, timeout=120)


def test_bad_environment_value_is_a_fail_line_not_a_traceback():
    p = _doctor("--no-smoke", env={"SHARDFLOW_COMM_TIMEOUT": "abc"})
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "Traceback" not in out
    assert "[FAIL] SHARDFLOW_COMM_TIMEOUT: SHARDFLOW_COMM_TIMEOUT must be a number of seconds, got 'abc'" in out
    assert "[SKIP] smoke all_reduce" in out


def test_json_report_lists_every_check_with_status():
    p = _doctor("--no-smoke", "--json", env={"SHARDFLOW_DEBUG": "colectives",
                                             "OMPI_MCA_btl_tcp_if_include": "nosuchif0"})
    assert p.returncode == 1, p.stderr
    report = json.loads(p.stdout)
    by_name = {c["name"]: c for c in report["checks"]}
    assert report["failures"] == 2
    assert by_name["SHARDFLOW_DEBUG"]["status"] == "FAIL"
    assert "colectives" in by_name["SHARDFLOW_DEBUG"]["detail"]
    assert by_name["OMPI_MCA_btl_tcp_if_include"]["status"] == "FAIL"
    assert "nosuchif0" in by_name["OMPI_MCA_btl_tcp_if_include"]["detail"]
    assert by_name["versions"]["data"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert {c["status"] for c in report["checks"]} <= {"OK", "INFO", "WARN", "FAIL", "SKIP"}


def test_bad_hosts_argument_exits_2():
    assert doctor.main(["--hosts", "a b", "--no-smoke"]) == 2


def _fake_sysfs(tmp_path):
    root = tmp_path / "net"
    devices = tmp_path / "devices"
    for name, physical, typ, state in (("lo", False, "772", "unknown"), ("eth0", True, "1", "up"),
                                       ("veth9a1", False, "1", "up"), ("docker0", False, "1", "up"),
                                       ("eth1", False, "1", "down")):
        d = root / name
        d.mkdir(parents=True)
        (d / "type").write_text(typ)
        (d / "operstate").write_text(state)
        if physical:
            (devices / name).mkdir(parents=True)
            os.symlink(devices / name, d / "device")
    return str(root)


ADDRS = {"lo": "127.0.0.1/8", "eth0": "10.1.0.5/16", "veth9a1": "172.18.0.2/24",
         "docker0": "172.17.0.1/16", "eth1": None}


def test_interfaces_are_classified(tmp_path):
    ifaces = {i.name: i for i in doctor_net.interfaces(_fake_sysfs(tmp_path), ADDRS)}
    assert {n: i.kind for n, i in ifaces.items()} == {
        "lo": "loopback", "eth0": "physical", "veth9a1": "virtual", "docker0": "virtual",
        "eth1": "virtual"}
    assert ifaces["veth9a1"].what.startswith("veth")
    assert ifaces["docker0"].what == "docker bridge"
    assert not ifaces["eth1"].up and ifaces["eth1"].network is None
    assert str(ifaces["eth0"].network) == "10.1.0.5/16"


def test_interface_suggestion_and_wrong_settings(tmp_path):
    ifaces = doctor_net.interfaces(_fake_sysfs(tmp_path), ADDRS)
    hosts = [ipaddress.IPv4Address("10.1.3.7")]
    assert doctor_net.suggest_interface(ifaces, hosts) == ["eth0"]
    assert doctor_net.suggest_interface(ifaces, []) == ["eth0"]  # physical first
    check = doctor_net.check_if_setting
    assert check("OMPI_MCA_btl_tcp_if_include", "eth0", ifaces, hosts) is None
    # with remote hosts Open MPI gets the subnet (valid whatever each host names its NIC)
    missing = check("OMPI_MCA_btl_tcp_if_include", "ib0", ifaces, hosts)
    assert "ib0, which does not exist" in missing
    assert "fix: set OMPI_MCA_btl_tcp_if_include=10.1.0.0/16" in missing
    wrong = check("OMPI_MCA_btl_tcp_if_include", "docker0", ifaces, hosts)
    assert "reaches 10.1.3.7" in wrong and "fix: set OMPI_MCA_btl_tcp_if_include=10.1.0.0/16" in wrong
    assert check("OMPI_MCA_btl_tcp_if_include", "10.1.0.0/16", ifaces, hosts) is None
    assert "no subnet listed contains 10.1.3.7" in check("OMPI_MCA_btl_tcp_if_include",
                                                        "172.17.0.0/16", ifaces, hosts)
    # a name that exists here but not on a remote host (mpiexec passes one value to all)
    remote = check("OMPI_MCA_btl_tcp_if_include", "eth0", ifaces, hosts, {"node2": ["lo", "ens5"]})
    assert "names no interface of host node2 (its interfaces: lo, ens5)" in remote
    assert check("NCCL_SOCKET_IFNAME", "e", ifaces, hosts, {"node2": ["lo", "ens5"]}) is None
    # NCCL: a prefix matches (eth -> eth0, eth1), '=' means exact, '^' excludes (not checked)
    assert check("NCCL_SOCKET_IFNAME", "eth", ifaces, hosts) is None
    assert "does not exist" in check("NCCL_SOCKET_IFNAME", "=eth", ifaces, hosts)
    assert check("NCCL_SOCKET_IFNAME", "^docker", ifaces, hosts) is None
    assert doctor_net.parse_hosts("a:4,b:4,a") == ["a", "b"]


TOPO = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV12\tSYS\tSYS\tPXB\t0-31\t0\t\tN/A
GPU1\tNV12\t X \tSYS\tSYS\tPXB\t0-31\t0\t\tN/A
GPU2\tSYS\tSYS\t X \tNV12\tSYS\t32-63\t1\t\tN/A
GPU3\tSYS\tSYS\tNV12\t X \tSYS\t32-63\t1\t\tN/A
NIC0\tPXB\tPXB\tSYS\tSYS\t X \t\t\t\t

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
"""


def test_gpu_topology_summary():
    m = doctor_gpu.parse_topo(TOPO)
    assert sorted(m) == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0"]
    assert m["GPU0"]["GPU1"] == "NV12" and m["GPU2"]["GPU0"] == "SYS" and m["GPU0"]["NIC0"] == "PXB"
    status, detail, data = doctor_gpu.summarise(m)
    assert status == "WARN"
    assert data == {"gpus": 4, "pairs": {"NV12": 2, "SYS": 4}}
    assert "GPU0-GPU2 SYS" in detail
    one = doctor_gpu.summarise(doctor_gpu.parse_topo("\tGPU0\tCPU Affinity\nGPU0\t X \t0-7\n"))
    assert one[0] == "INFO" and one[2]["gpus"] == 1


def test_version_comparison():
    a = {"python": "3.11.7", "numpy": "2.4.6", "mpi4py": "4.1.2", "mpi_library": "Open MPI v5.0.11",
         "shardflow": "0.1.0", "cupy": "missing"}
    b = {**a, "mpi_library": "MPICH 4.2", "cupy": "13.3.0", "nccl": "22005"}
    assert doctor_probe.compare({"h1": a, "h2": dict(a)}) == []
    # CuPy only on one host (a CPU head node) is not a mismatch; the MPI library is
    assert doctor_probe.compare({"h1": a, "h2": b}) == [
        ("mpi_library", {"h1": "Open MPI v5.0.11", "h2": "MPICH 4.2"})]


def test_blas_threads_set_by_launcher_is_not_a_warning(monkeypatch):
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(v, raising=False)
    rep = doctor.Report(echo=False)
    doctor.check_cores(rep, 2)
    blas = [c for c in rep.checks if c.name == "BLAS threads"]
    assert [c.status for c in blas] == ["OK"] and "sets OMP_NUM_THREADS" in blas[0].detail
    cores = os.cpu_count()
    monkeypatch.setenv("OMP_NUM_THREADS", str(cores))
    rep = doctor.Report(echo=False)
    doctor.check_cores(rep, 2)
    assert [c.status for c in rep.checks if c.name == "BLAS threads"] == ["WARN"]
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    rep = doctor.Report(echo=False)
    doctor.check_cores(rep, 2)
    assert [c.status for c in rep.checks if c.name == "BLAS threads"] == ["FAIL"]


@pytest.mark.mpi
def test_smoke_all_reduce_on_two_real_ranks():
    rep = doctor.Report(echo=False)
    doctor.smoke(rep, None, 2, timeout=90)
    (c,) = rep.checks
    assert c.status == "OK", c.detail
    assert c.data["ranks"] == 2 and c.data["correct"] and c.data["expected"] == 3.0
    assert c.data["latency_us"] > 0 and c.data["busbw_gbs"] > 0


def test_mpi_tcp_port_range(monkeypatch):
    import socket

    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        monkeypatch.setenv("OMPI_MCA_btl_tcp_port_min_v4", str(port))
        monkeypatch.setenv("OMPI_MCA_btl_tcp_port_range_v4", "1")
        rep = doctor.Report(echo=False)
        doctor.check_tcp_range(rep)
        assert rep.checks[0].status == "FAIL" and f"{port}-{port}" in rep.checks[0].detail
    rep = doctor.Report(echo=False)
    doctor.check_tcp_range(rep)  # the port is free again
    assert rep.checks[0].status == "OK"
    monkeypatch.setenv("OMPI_MCA_btl_tcp_port_min_v4", "http")
    rep = doctor.Report(echo=False)
    doctor.check_tcp_range(rep)
    assert rep.checks[0].status == "FAIL" and "not port numbers" in rep.checks[0].detail
