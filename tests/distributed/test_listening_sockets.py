"""What listens, and who may connect (issue 25, the socket table in docs/DISTRIBUTED.md):
a parameter server refuses a connection that does not prove it holds the job's secret
(before reading any request: no gradient pushed, no value pulled), the MPI cluster's
servers listen on 127.0.0.1 on one host and carry the secret in their addresses, and the
ranks of a local `shardflow run` job listen on no network interface (Open MPI's TCP
transport is not loaded for a one-host job)."""

import os
import re
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

import shardflow as sf
from shardflow.comm.launcher import child_processes, kill_session
from shardflow.distributed.ps import ParameterServer, PSWorker
from shardflow.distributed.ps.auth import ServerAddress
from shardflow.distributed.ps.cluster import mpi_cluster, tf_config_cluster
from shardflow.distributed.ps.wire import PSError, recv_msg, send_msg


@pytest.fixture
def server():
    s = ParameterServer(0, 1, lr=0.1, secret="s3cret", worker_timeout=30, start_timeout=30)
    t = threading.Thread(target=s.serve, daemon=True)
    t.start()
    yield s
    with s.cv:  # end serve(): no live worker left
        s.live.clear()
    t.join(timeout=5)


def _raw(server):
    sock = socket.create_connection(server.address, timeout=5)
    hello, _ = recv_msg(sock)
    return sock, hello


def test_a_request_without_the_secret_is_refused_before_it_is_read(server):
    sock, hello = _raw(server)
    assert hello["op"] == "hello" and hello["auth"] is True and len(hello["nonce"]) == 64
    send_msg(sock, {"op": "init", "worker": 0}, np.ones(4, np.float32))  # no auth first
    reply, _ = recv_msg(sock)
    assert reply == {"error": "refused: it sent a request without the job's secret"}
    assert sock.recv(1) == b""  # closed
    assert server.shard is None and server.refused == 1  # nothing was taken


def test_a_wrong_secret_is_refused(server):
    sock, hello = _raw(server)
    send_msg(sock, {"op": "auth", "mac": "0" * 64})
    assert recv_msg(sock)[0] == {"error": "refused: wrong secret"}
    with pytest.raises(PSError, match=r"refused: wrong secret: the secrets differ"):
        PSWorker([sf.nn.Parameter(sf.ones(4))], [ServerAddress(*server.address, "other")], 0,
                 connect_timeout=5)
    with pytest.raises(PSError, match=r"requires the job's secret and this worker has none"):
        PSWorker([sf.nn.Parameter(sf.ones(4))], [server.address], 0, connect_timeout=5)
    assert server.refused >= 2 and server.shard is None


def test_the_right_secret_opens_it(server):
    w = PSWorker([sf.nn.Parameter(sf.ones(4))], [ServerAddress(*server.address, "s3cret")], 0,
                 connect_timeout=5)
    w.init_params()
    assert server.shard is not None and server.shard.tolist() == [1.0] * 4
    w.close()


class _World:
    """Two ranks of one host seen from rank ``rank``: enough of a communicator for
    mpi_cluster (its gathers return this rank's value for both ranks, except the secret,
    which only rank 0 draws)."""

    def __init__(self, rank):
        self.rank, self.size = rank, 2

    def all_gather_object(self, obj):
        return [obj, obj]

    def new_group(self, ranks):
        return None


def test_mpi_cluster_listens_on_loopback_with_a_fresh_secret():
    made = []

    def make(r, workers, host):
        s = ParameterServer(r, workers, lr=0.1, host=host)
        made.append(s)
        return s

    c = mpi_cluster(_World(0), 1, make)
    try:
        assert made[0].address[0] == "127.0.0.1"  # one host: never on all interfaces
        assert made[0].secret and len(made[0].secret) == 64
        assert c.servers[0].secret == made[0].secret and "secret=set" in repr(c.servers[0])
    finally:
        made[0].sock.close()


def test_tf_config_cluster_takes_the_secret_from_the_dict_or_the_environment(monkeypatch):
    cfg = {"cluster": {"ps": ["127.0.0.1:0"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("SHARDFLOW_JOB_SECRET", "from-env")
    assert tf_config_cluster(cfg, None).servers[0].secret == "from-env"
    assert tf_config_cluster({**cfg, "secret": "mine"}, None).servers[0].secret == "mine"


QUIET = """
import time
import shardflow as sf
import shardflow.distributed as dist
dist.init_process_group()
t = sf.zeros(4)
dist.all_reduce(t)
print("ready", flush=True)
time.sleep(60)
"""


def _listening(pids):
    """``[(pid, address)]`` of the TCP sockets in LISTEN state that ``pids`` hold."""
    owner = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                m = re.match(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
                if m:
                    owner[m.group(1)] = pid
        except OSError:
            continue
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in owner:
                out.append((owner[f[9]], f[1]))
    return out


@pytest.mark.mpi
def test_the_ranks_of_a_local_job_listen_on_no_interface(tmp_path):
    script = tmp_path / "quiet.py"
    script.write_text(QUIET)
    p = subprocess.Popen([sys.executable, "-m", "shardflow", "run", "-n", "2", str(script)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        ready = 0
        for line in p.stdout:
            ready += "ready" in line
            if ready == 2:
                break
        mpiexec = child_processes(p.pid)
        ranks = [r for m in mpiexec for r in child_processes(m)]
        assert len(ranks) == 2, (mpiexec, ranks)
        assert _listening(ranks) == []  # before: 0.0.0.0 and :: (Open MPI's TCP transport)
    finally:
        kill_session(p.pid, grace=0.5)
