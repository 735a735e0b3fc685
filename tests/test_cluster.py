import socket
import time

import pytest

from orchestrator.errors import BenchctlError
from orchestrator.lab.cluster import GCS_PORT, head_address, probe


def test_head_address_from_ray_cluster_file(tmp_path):
    f = tmp_path / "lab.yaml"
    f.write_text("cluster_name: lab\nprovider:\n  type: local\n  head_ip: 10.1.2.3\n  worker_ips: []\n")
    assert head_address(f) == f"10.1.2.3:{GCS_PORT}"
    f.write_text(
        "provider: {type: local, head_ip: 10.1.2.3}\n"
        "head_start_ray_commands: [ray stop, 'ray start --head --port=7000 --num-cpus=4']\n"
    )
    assert head_address(f) == "10.1.2.3:7000"


def test_yaml_error_names_file_line_column(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("provider:\n  head_ip: [1.2.3.4\n  type: local\n")
    with pytest.raises(BenchctlError, match=rf"{f}:\d+:\d+: invalid YAML"):
        head_address(f)


def test_file_without_head_is_refused(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("just: data\n")
    with pytest.raises(BenchctlError, match="has no provider.head_ip"):
        head_address(f)
    with pytest.raises(BenchctlError, match="cannot read"):
        head_address(tmp_path / "missing.yaml")


def test_unreachable_head_fails_within_the_bound():
    with socket.socket() as s:  # a port nobody listens on: bind, note it, close
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(BenchctlError, match=f"cannot reach the Ray head at 127.0.0.1:{port}"):
        probe(f"127.0.0.1:{port}", timeout_s=2.0)
    assert time.monotonic() - t0 < 10  # bounded, not a hang (generous: this is not a speed check)


@pytest.mark.slow  # starts a local Ray
def test_a_local_ray_refuses_clients_without_its_token():
    # Ray 2.60 listens on all interfaces even with node address 127.0.0.1: token auth is what guards it
    import ray

    from orchestrator.lab.cluster import auth_required, connect_local

    connect_local()
    try:
        address = ray.get_runtime_context().gcs_address
        assert auth_required(address) is True
    finally:
        ray.shutdown()
