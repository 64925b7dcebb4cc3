"""Multi-host runs on one machine: two network namespaces joined by a veth pair play two
hosts (each rank in its own namespace and UTS hostname), Open MPI's remote launch goes
through an ssh *agent* script (``PRTE_MCA_plm_ssh_agent``) that enters the namespace
instead of sshd. Checked: ``shardflow run --hosts`` gives the single-process result,
the doctor passes (ssh via the agent, versions across hosts, the 2-host smoke all_reduce)
and catches a deliberately wrong ``btl_tcp_if_include``. Skipped with the reason where
namespaces cannot be made (not root, no ``ip``/``unshare``, no CAP_NET_ADMIN).

Slurm: detection of an ``srun`` rank and of an allocation, with a faked environment.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from shardflow import _config
from shardflow.cli import slurm
from shardflow.comm.launcher import rank_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = """#!/bin/sh
# "agent HOST CMD..." (how Open MPI starts its remote daemon): run CMD in HOST's namespace
host="$1"; shift
case "$host" in
  {ip_a}) ns={ns_a} ;;
  {ip_b}) ns={ns_b} ;;
  *) echo "agent: unknown host $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns; exec /bin/sh -c \\"\\$0\\"" "$*"
"""


def _sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    if os.geteuid() != 0 or not (shutil.which("ip") and shutil.which("unshare")):
        pytest.skip("needs root, iproute2's `ip` and util-linux's `unshare` for network namespaces")
    tag = f"{os.getpid() % 100000}"
    ns_a, ns_b, if_a, if_b = f"sfA{tag}", f"sfB{tag}", f"sfa{tag}", f"sfb{tag}"
    ip_a, ip_b = "10.231.0.1", "10.231.0.2"
    steps = [("netns", "add", ns_a), ("netns", "add", ns_b),
             ("link", "add", if_a, "type", "veth", "peer", "name", if_b),
             ("link", "set", if_a, "netns", ns_a), ("link", "set", if_b, "netns", ns_b),
             ("-n", ns_a, "addr", "add", f"{ip_a}/24", "dev", if_a),
             ("-n", ns_b, "addr", "add", f"{ip_b}/24", "dev", if_b),
             ("-n", ns_a, "link", "set", if_a, "up"), ("-n", ns_b, "link", "set", if_b, "up"),
             ("-n", ns_a, "link", "set", "lo", "up"), ("-n", ns_b, "link", "set", "lo", "up")]
    try:
        for s in steps:
            p = _sh("ip", *s)
            if p.returncode != 0:
                pytest.skip(f"cannot make network namespaces here (`ip {' '.join(s)}`: "
                            f"{p.stderr.strip()})")
        agent = tmp_path_factory.mktemp("agent") / "agent"
        agent.write_text(AGENT.format(ip_a=ip_a, ip_b=ip_b, ns_a=ns_a, ns_b=ns_b))
        agent.chmod(0o755)
        yield {"ns_a": ns_a, "if_a": if_a, "ip_a": ip_a, "ip_b": ip_b, "agent": str(agent),
               "hosts": f"{ip_a}:1,{ip_b}:1"}
    finally:
        for ns in (ns_a, ns_b):
            _sh("ip", "netns", "del", ns)


def _in_host_a(hosts, argv, env=None, timeout=120):
    """Run ``argv`` in namespace A (its own hostname), with the agent as Open MPI's ssh."""
    e = rank_env({"PRTE_MCA_plm_ssh_agent": hosts["agent"], **(env or {})})
    inner = f'hostname {hosts["ns_a"]}; cd {REPO}; exec "$@"'
    return subprocess.run(["ip", "netns", "exec", hosts["ns_a"], "unshare", "--uts", "/bin/sh",
                           "-c", inner, "sh", *argv], env=e, capture_output=True, text=True,
                          timeout=timeout)


PROGRAM = """
import json, socket
import numpy as np
import shardflow as sf
import shardflow.distributed as dist
from shardflow.nn.parallel import DistributedDataParallel

dist.init_process_group()
r = dist.get_rank()
rng = np.random.default_rng(0)
X = rng.standard_normal((8, 3)).astype(np.float32)
Y = rng.standard_normal((8, 2)).astype(np.float32)
sf.manual_seed(0)
lin = sf.nn.Linear(3, 2)
lin.weight.data.copy_(sf.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 10))
lin.bias.data.zero_()
model = DistributedDataParallel(lin)
opt = sf.optim.SGD(model.parameters(), lr=0.1)
x, y = sf.tensor(X[r * 4:(r + 1) * 4]), sf.tensor(Y[r * 4:(r + 1) * 4])
for _ in range(3):
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
names = [None] * 2
dist.all_gather_object(names, socket.gethostname())
if r == 0:
    print("RESULT " + json.dumps({"w": lin.weight.detach().numpy().tolist(),
                                  "b": lin.bias.detach().numpy().tolist(), "hosts": names}))
"""


def _reference():
    """The same 3 SGD steps on the whole batch in one process (NumPy)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3)).astype(np.float64)
    Y = rng.standard_normal((8, 2)).astype(np.float64)
    W = np.arange(6, dtype=np.float64).reshape(2, 3) / 10
    b = np.zeros(2)
    for _ in range(3):
        g = 2 * (X @ W.T + b - Y) / Y.size  # d mean((XW^T + b - Y)^2)
        W, b = W - 0.1 * g.T @ X, b - 0.1 * g.sum(0)
    return W, b


@pytest.mark.mpi
def test_run_across_two_hosts_equals_one_process(two_hosts, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    timeline = tmp_path / "timeline.json"
    p = _in_host_a(two_hosts, [sys.executable, "-m", "shardflow", "run", "-n", "2", "--hosts",
                               two_hosts["hosts"], "--timeout", "90", "--timeline", str(timeline),
                               str(prog)])
    line = next((ln for ln in p.stdout.splitlines() if "RESULT " in ln), None)
    assert p.returncode == 0 and line, p.stdout + p.stderr
    got = json.loads(line.split("RESULT ", 1)[1])
    assert got["hosts"] == [two_hosts["ns_a"], two_hosts["ns_a"].replace("sfA", "sfB")]
    # each host's rank wrote its trace; the launcher merged them (DDP's bucket all_reduce)
    ev = json.loads(timeline.read_text())["traceEvents"]
    for rank in (0, 1):
        comm = [e for e in ev if e.get("pid") == rank and e.get("cat") == "comm"]
        assert any(e["args"].get("bytes") == (6 + 2) * 4 for e in comm), comm
    W, b = _reference()
    np.testing.assert_allclose(got["w"], W, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["b"], b, rtol=1e-5, atol=1e-6)


@pytest.mark.mpi
def test_doctor_across_hosts_and_a_wrong_interface(two_hosts):
    base = [sys.executable, "-m", "shardflow", "doctor", "--json", "--hosts", two_hosts["hosts"]]
    subnet = two_hosts["ip_a"].rsplit(".", 1)[0] + ".0/24"
    p = _in_host_a(two_hosts, base + ["--smoke-timeout", "60"],
                   env={"OMPI_MCA_btl_tcp_if_include": subnet})
    report = json.loads(p.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["failures"] == 0, p.stdout
    assert checks[f"ssh {two_hosts['ip_b']}"]["status"] == "OK"
    assert checks["versions across hosts"]["detail"] == "identical on 2 hosts"
    smoke = checks["smoke all_reduce"]
    assert smoke["status"] == "OK" and smoke["data"]["correct"]
    assert sorted(set(smoke["data"]["hosts"])) == sorted(
        [two_hosts["ns_a"], two_hosts["ns_a"].replace("sfA", "sfB")])
    assert checks["interface to use"]["detail"].startswith(
        f"{two_hosts['if_a']}: export OMPI_MCA_btl_tcp_if_include={subnet} ")
    # wrong: loopback (exists everywhere, reaches no other host); host A's interface name
    # (host B has none of that name: Open MPI there would have no TCP interface and hang)
    for wrong, says in (("lo", f"reaches {two_hosts['ip_b']}"),
                        (two_hosts["if_a"], f"names no interface of host {two_hosts['ip_b']}")):
        p = _in_host_a(two_hosts, base + ["--no-smoke"],
                       env={"OMPI_MCA_btl_tcp_if_include": wrong})
        bad = {c["name"]: c for c in json.loads(p.stdout)["checks"]}["OMPI_MCA_btl_tcp_if_include"]
        assert p.returncode == 1 and bad["status"] == "FAIL", bad
        assert says in bad["detail"] and f"fix: set OMPI_MCA_btl_tcp_if_include={subnet}" in bad["detail"]


def test_slurm_rank_detection(monkeypatch):
    for k in list(os.environ):
        if k.startswith(("OMPI_COMM_WORLD_", "PMI_", "SLURM_")) or k in ("RANK", "WORLD_SIZE"):
            monkeypatch.delenv(k)
    for k, v in {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1",
                 "SLURM_NTASKS_PER_NODE": "4", "SLURM_JOB_NODELIST": "gpu[07-08]"}.items():
        monkeypatch.setenv(k, v)
    assert _config.launch_info() == _config.LaunchInfo("slurm", 5, 8, 1, 4)
    alloc = slurm.allocation()
    assert alloc.nodes == ("gpu07", "gpu08") and alloc.hosts == "gpu07:4,gpu08:4"


def test_slurm_nodelist_and_tasks_parsing():
    assert slurm.expand_nodelist("node[01-03,07],gpu1,rack[8-10]b") == [
        "node01", "node02", "node03", "node07", "gpu1", "rack8b", "rack9b", "rack10b"]
    assert slurm.tasks_per_node("2(x3),1", 4) == [2, 2, 2, 1]
    assert slurm.tasks_per_node("4", 3) == [4, 4, 4]
    with pytest.raises(ValueError, match="bad range"):
        slurm.expand_nodelist("n[5-2]")
    with pytest.raises(ValueError, match="gives 2 counts for 3 nodes"):
        slurm.allocation({"SLURM_JOB_NODELIST": "a,b,c", "SLURM_TASKS_PER_NODE": "1(x2)"})


def test_launcher_uses_the_slurm_allocation(tmp_path):
    env = {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "cn[1-2]", "SLURM_TASKS_PER_NODE": "2(x2)",
           "SLURM_NTASKS": "4"}
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    run = [sys.executable, "-m", "shardflow", "run", "--dry-run"]
    p = subprocess.run(run + [str(script)], env=rank_env(env), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert " -n 4 " in p.stdout and "--host cn1:2,cn2:2" in p.stdout
    assert "Slurm job 77: 2 node(s)" in p.stderr
    p = subprocess.run(run + ["-n", "3", "--hosts", "h:3", str(script)], env=rank_env(env),
                       capture_output=True, text=True, timeout=60)
    assert " -n 3 " in p.stdout and "--host h:3" in p.stdout and "Slurm" not in p.stderr
