import subprocess

from orchestrator.lab.provenance import PROJECT_ROOT, driver_provenance, git_commit


def test_commit_from_environment_when_the_checkout_has_no_git(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHCTL_GIT_COMMIT", "abc123")
    assert git_commit(tmp_path) == "abc123"


def test_commit_of_a_real_repository(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCHCTL_GIT_COMMIT", raising=False)
    assert git_commit(tmp_path) is None  # not a repository
    run = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (tmp_path / "f").write_text("1")
    run("add", "f")
    run("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x")
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    assert git_commit(tmp_path) == head.strip()
    (tmp_path / "f").write_text("2")
    assert git_commit(tmp_path) == head.strip() + "-dirty"


def test_driver_provenance_names_versions():
    info = driver_provenance()
    assert info["torch"] and info["driver_host"] and PROJECT_ROOT.joinpath("pyproject.toml").is_file()
