"""``shardflow.hub`` against ``torch.hub`` 2.13, without the network: weights come from
``file://`` URLs of files made in tmp_path (urllib opens them as it opens http), GitHub
repositories from a cache folder or a local zip in GitHub's archive layout."""

import hashlib
import io
import os
import sys
import zipfile
from urllib.error import URLError

import numpy as np
import pytest
import torch

import shardflow as sf


@pytest.fixture(autouse=True)
def _hub_home(tmp_path, monkeypatch):
    """Every test caches under tmp_path/torch_home (never the user's ~/.cache/torch) and starts
    without a set_dir folder."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    for var in ("TORCH_HUB", "TORCH_MODEL_ZOO"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sf.hub, "_hub_dir", None)
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    return tmp_path / "torch_home"


def _torch_linear_file(folder, stem="linear", hashed=True):
    """A torch.save'd state dict of a seeded torch Linear(4, 3), named ``stem-<sha256[:8]>.pth``
    (torch's hub convention) when ``hashed``; returns (module, path)."""
    torch.manual_seed(0)
    module = torch.nn.Linear(4, 3)
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save(module.state_dict(), buf)
    data = buf.getvalue()
    name = f"{stem}-{hashlib.sha256(data).hexdigest()[:8]}.pth" if hashed else f"{stem}.pth"
    path = folder / name
    path.write_bytes(data)
    return module, path


def _assert_state_dict_equal(sf_state, torch_state):
    assert list(sf_state) == list(torch_state)
    for k, v in torch_state.items():
        np.testing.assert_array_equal(sf_state[k].numpy(), v.numpy())


# ------------------------------------------------------------------ cache folders
def test_get_dir_follows_torch_home_xdg_and_set_dir(tmp_path, monkeypatch):
    assert sf.hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "torch_home" / "hub")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sf.hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    assert sf.hub._get_torch_home() == torch.hub._get_torch_home()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert sf.hub.get_dir() == torch.hub.get_dir() == os.path.expanduser("~/.cache/torch/hub")
    sf.hub.set_dir(tmp_path / "mine")
    assert sf.hub.get_dir() == str(tmp_path / "mine")
    sf.hub.set_dir("~/elsewhere")
    assert sf.hub.get_dir() == os.path.expanduser("~/elsewhere")


def test_deprecated_torch_hub_variable_warns_like_torch(monkeypatch):
    monkeypatch.setenv("TORCH_HUB", "/old")
    with pytest.warns(UserWarning, match="TORCH_HUB is deprecated"):
        torch.hub.get_dir()
    with pytest.warns(UserWarning, match="TORCH_HUB is deprecated"):
        sf.hub.get_dir()


def test_module_constants_match_torch():
    assert sf.hub.HASH_REGEX.pattern == torch.hub.HASH_REGEX.pattern
    assert sf.hub.tqdm is torch.hub.tqdm  # both the installed tqdm
    assert sorted(sf.hub.__all__) == sorted(torch.hub.__all__)


# ------------------------------------------------------------------ load_state_dict_from_url
def test_load_state_dict_from_url_downloads_into_checkpoints_and_loads_torch_file(tmp_path, _hub_home, capsys):
    module, src = _torch_linear_file(tmp_path / "server")
    url = src.as_uri()
    state = sf.hub.load_state_dict_from_url(url, progress=False, check_hash=True)
    cached = _hub_home / "hub" / "checkpoints" / src.name
    assert cached.read_bytes() == src.read_bytes()
    assert f'Downloading: "{url}" to {cached}' in capsys.readouterr().out
    assert [p.name for p in cached.parent.iterdir()] == [src.name]  # no .partial left

    reference = torch.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "torch_dir"),
                                                   progress=False, check_hash=True)
    _assert_state_dict_equal(state, reference)
    model = sf.nn.Linear(4, 3)
    model.load_state_dict(state)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(model(sf.tensor(x)).detach().numpy(),
                               module(torch.tensor(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_cached_file_is_reused_without_download(tmp_path, _hub_home, capsys):
    _, src = _torch_linear_file(tmp_path / "server")
    first = sf.hub.load_state_dict_from_url(src.as_uri(), progress=False)
    capsys.readouterr()
    src.unlink()  # a second download would now fail
    second = sf.hub.load_state_dict_from_url(src.as_uri(), progress=False, check_hash=True)
    assert "Downloading" not in capsys.readouterr().out
    _assert_state_dict_equal(second, {k: torch.from_numpy(v.numpy()) for k, v in first.items()})


def test_wrong_hash_prefix_raises_and_keeps_nothing(tmp_path):
    _, good = _torch_linear_file(tmp_path / "server")
    bad = good.with_name("linear-deadbeef.pth")
    good.rename(bad)
    for lib, model_dir in ((torch, tmp_path / "t"), (sf, tmp_path / "s")):
        with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef"') as info:
            lib.hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(model_dir), progress=False,
                                             check_hash=True)
        assert list(model_dir.iterdir()) == []  # neither the file nor its .partial
    assert bad.as_uri() in str(info.value) and "check_hash=False" in str(info.value)
    # without check_hash the same file loads (the name is not checked)
    state = sf.hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(tmp_path / "s"), progress=False)
    assert set(state) == {"weight", "bias"}


def test_file_name_map_location_and_weights_only(tmp_path):
    module, src = _torch_linear_file(tmp_path / "server", hashed=False)
    state = sf.hub.load_state_dict_from_url(src.as_uri(), model_dir=str(tmp_path / "m"),
                                            map_location="cpu", progress=False,
                                            file_name="renamed.pt", weights_only=True)
    assert os.listdir(tmp_path / "m") == ["renamed.pt"]
    _assert_state_dict_equal(state, module.state_dict())


def test_safetensors_checkpoint_from_url(tmp_path):
    sf.manual_seed(0)
    model = sf.nn.Linear(3, 2)
    (tmp_path / "server").mkdir()
    src = tmp_path / "server" / "tiny.safetensors"
    sf.save(model.state_dict(), str(src))
    state = sf.hub.load_state_dict_from_url(src.as_uri(), model_dir=str(tmp_path / "m"), progress=False)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(state[k].numpy(), v.numpy())


def test_legacy_single_file_zip_is_extracted_and_loaded(tmp_path):
    module, src = _torch_linear_file(tmp_path / "server", hashed=False)
    archive = tmp_path / "server" / "legacy.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(src, "weights.pth")
    with pytest.warns(FutureWarning, match="old format < 1.6"):
        reference = torch.hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(tmp_path / "t"),
                                                       progress=False)
    with pytest.warns(FutureWarning, match="old format < 1.6"):
        state = sf.hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(tmp_path / "s"),
                                                progress=False)
    _assert_state_dict_equal(state, reference)
    assert sorted(os.listdir(tmp_path / "s")) == sorted(os.listdir(tmp_path / "t")) == ["legacy.zip", "weights.pth"]


# ------------------------------------------------------------------ download_url_to_file
def test_download_url_to_file_copies_bytes_with_progress_bar(tmp_path, capsys):
    src = tmp_path / "blob.bin"
    data = os.urandom(300_000)  # > one 128 KiB chunk
    src.write_bytes(data)
    dst = tmp_path / "out.bin"
    sf.hub.download_url_to_file(src.as_uri(), str(dst), hash_prefix=hashlib.sha256(data).hexdigest()[:10])
    assert dst.read_bytes() == data
    assert "100%" in capsys.readouterr().err  # tqdm's bar, on stderr
    sf.hub.download_url_to_file(src.as_uri(), str(tmp_path / "quiet.bin"), progress=False)
    assert capsys.readouterr().err == ""


def test_download_failures_name_the_url_and_the_fix(tmp_path):
    url = (tmp_path / "missing.pth").as_uri()
    with pytest.raises(URLError):
        torch.hub.download_url_to_file(url, str(tmp_path / "t.pth"), progress=False)
    with pytest.raises(URLError, match=f"fetching {url}; check the URL"):
        sf.hub.download_url_to_file(url, str(tmp_path / "s.pth"), progress=False)
    with pytest.raises(URLError, match="copy the file to its place in the cache folder"):
        sf.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "m"), progress=False)
    os.rmdir(tmp_path / "m")
    assert sorted(os.listdir(tmp_path)) == []  # no partial files
    src = tmp_path / "x.bin"
    src.write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match="does not exist; create it first"):
        sf.hub.download_url_to_file(src.as_uri(), str(tmp_path / "no" / "such" / "x.bin"), progress=False)


# ------------------------------------------------------------------ load(source='local')
_HUBCONF = '''\
"""A tiny hub repository."""
dependencies = ["numpy"]

import shardflow as torch
from tiny_model import make_linear


def linear(out_features=3, pretrained=False, weights_url=None):
    """A Linear(4, out_features), with the weights at weights_url when pretrained."""
    model = make_linear(out_features)
    if pretrained:
        model.load_state_dict(torch.hub.load_state_dict_from_url(weights_url, progress=False))
    return model


def _helper():
    pass
'''

_TINY_MODEL = '''\
import shardflow as torch


def make_linear(out_features):
    return torch.nn.Linear(4, out_features)
'''


def _write_repo(folder, hubconf=_HUBCONF):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hubconf.py").write_text(hubconf)
    (folder / "tiny_model.py").write_text(_TINY_MODEL)
    return folder


def test_load_local_calls_the_entry_point_with_args_and_kwargs(tmp_path):
    repo = _write_repo(tmp_path / "repo")
    module, src = _torch_linear_file(tmp_path / "server")
    path_before = list(sys.path)
    model = sf.hub.load(str(repo), "linear", 3, source="local", pretrained=True, weights_url=src.as_uri())
    assert sys.path == path_before  # the repo folder is on sys.path only during the call
    assert isinstance(model, sf.nn.Linear) and model.weight.shape == (3, 4)
    _assert_state_dict_equal(model.state_dict(), module.state_dict())
    assert sf.hub.load(str(repo), "linear", source="LOCAL", out_features=5).weight.shape == (5, 4)


def test_load_local_errors_match_torch(tmp_path):
    repo = tmp_path / "plain"
    repo.mkdir()
    (repo / "hubconf.py").write_text("dependencies = ['numpy', 'no_such_package_xyz']\n"
                                     "def entry():\n    return 1\n")
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "hubconf.py").write_text("dependencies = ['numpy']\nVALUE = 3\n"
                                      "def entry(a, b=2):\n    return a + b\n")
    assert torch.hub.load(str(clean), "entry", 1, source="local", b=5) == 6
    assert sf.hub.load(str(clean), "entry", 1, source="local", b=5) == 6
    cases = [
        ((str(repo), "entry"), {"source": "local"}, RuntimeError,
         "Missing dependencies: no_such_package_xyz", "pip install no_such_package_xyz"),
        ((str(clean), "missing"), {"source": "local"}, RuntimeError,
         "Cannot find callable missing in hubconf", "entry points are: entry"),
        ((str(clean), "VALUE"), {"source": "local"}, RuntimeError,
         "Cannot find callable VALUE in hubconf", "entry"),
        ((str(clean), 3), {"source": "local"}, ValueError,
         "model should be a string of function name", "got int"),
        ((str(clean), "entry"), {"source": "svn"}, ValueError,
         'Unknown source: "svn". Allowed values: "github" \\| "local".', "svn"),
        ((str(tmp_path / "nowhere"), "entry"), {"source": "local"}, FileNotFoundError,
         "nowhere/hubconf.py", "takes a folder that contains hubconf.py"),
    ]
    for args, kwargs, exc, torch_message, fix in cases:
        with pytest.raises(exc, match=torch_message):
            torch.hub.load(*args, **kwargs)
        with pytest.raises(exc, match=torch_message) as info:
            sf.hub.load(*args, **kwargs)
        assert fix in str(info.value)


# ------------------------------------------------------------------ GitHub repositories (cache only)
def test_github_source_uses_the_cached_repo_and_records_trust(tmp_path, _hub_home, capsys):
    hub_dir = _hub_home / "hub"
    _write_repo(hub_dir / "someone_tiny_main")
    model = sf.hub.load("someone/tiny:main", "linear", source="github", trust_repo=True,
                        skip_validation=True, out_features=2)
    assert model.weight.shape == (2, 4)
    assert f"Using cache found in {hub_dir / 'someone_tiny_main'}" in capsys.readouterr().err
    # a repository already in the cache counts as trusted (torch's rule): nothing is appended
    assert (hub_dir / "trusted_list").read_text() == ""
    entries = sf.hub.list("someone/tiny:main", skip_validation=True, verbose=False)
    assert entries == torch.hub.list("someone/tiny:main", skip_validation=True, verbose=False)
    assert entries == ["linear", "make_linear"]
    assert "weights at weights_url" in sf.hub.help("someone/tiny:main", "linear", skip_validation=True)
    assert capsys.readouterr().err.count("Using cache found in") == 1  # list's verbose=False is quiet


def test_github_trust_prompt_refusal_stops_before_download(tmp_path, _hub_home, monkeypatch):
    answers = []
    monkeypatch.setattr("builtins.input", lambda prompt: answers.append(prompt) or "n")
    for lib in (torch, sf):
        with pytest.raises(Exception, match="Untrusted repository") as info:
            lib.hub.load("stranger/repo:main", "entry", trust_repo="check", skip_validation=True)
    assert len(answers) == 2 and answers[0] == answers[1]
    assert "trust_repo=True" in str(info.value)
    assert (_hub_home / "hub" / "trusted_list").read_text() == ""
    monkeypatch.setattr("builtins.input", lambda prompt: "maybe")
    with pytest.raises(ValueError, match="Unrecognized response maybe"):
        sf.hub.load("stranger/repo:main", "entry", trust_repo=False, skip_validation=True)


def _github_zip(path, top="someone-tiny-0123abc/", files=None):
    files = files if files is not None else {"hubconf.py": _HUBCONF, "tiny_model.py": _TINY_MODEL}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(top, "")
        for name, text in files.items():
            z.writestr(top + name, text)
    return path


def test_repo_archive_is_downloaded_extracted_and_renamed(tmp_path, _hub_home):
    hub_dir = _hub_home / "hub"
    hub_dir.mkdir(parents=True)
    archive = _github_zip(tmp_path / "zipball")
    repo_dir = hub_dir / "someone_tiny_main"
    sf.hub._install_repo_archive(archive.as_uri(), str(hub_dir), "main", str(repo_dir))
    assert sorted(os.listdir(hub_dir)) == ["someone_tiny_main"]  # zip and its top folder gone
    assert sorted(os.listdir(repo_dir)) == ["hubconf.py", "tiny_model.py"]
    model = sf.hub.load("someone/tiny:main", "linear", trust_repo=True, skip_validation=True)
    assert model.weight.shape == (3, 4)
    missing = (tmp_path / "no_zipball").as_uri()
    with pytest.raises(URLError, match=f"fetching {missing}.*put a copy of the repository at {repo_dir}"):
        sf.hub._install_repo_archive(missing, str(hub_dir), "main", str(repo_dir))
    assert sorted(os.listdir(hub_dir)) == ["someone_tiny_main", "trusted_list"]  # no main.zip


def test_archive_entries_escaping_the_cache_are_refused(tmp_path):
    target = tmp_path / "hub"
    target.mkdir()
    for name, message in [("../evil.py", "directory traversal"), ("/abs.py", "absolute path")]:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr(name, "x = 1\n")
        for lib in (torch, sf):
            with zipfile.ZipFile(buf) as z, pytest.raises(ValueError, match=message):
                lib.hub._safe_extract_zip(z, str(target))
    assert os.listdir(target) == [] and not (tmp_path / "evil.py").exists()


def test_malformed_github_spec_says_what_is_expected():
    with pytest.raises(ValueError, match="'owner/name\\[:ref\\]'.*source='local'"):
        sf.hub.load("just-a-name:main", "entry", trust_repo=True, skip_validation=True)


def test_trust_list_is_written_like_torch(tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("no prompt expected"))
    lists = {}
    for lib in (torch, sf):
        lib.hub.set_dir(str(tmp_path / lib.__name__))
        os.makedirs(lib.hub.get_dir())
        lib.hub._check_repo_is_trusted("someone", "tiny", "someone_tiny_main", trust_repo=True)
        lib.hub._check_repo_is_trusted("someone", "tiny", "someone_tiny_dev", trust_repo="check")
        lib.hub._check_repo_is_trusted("pytorch", "vision", "pytorch_vision_main", trust_repo="check")
        lists[lib] = (tmp_path / lib.__name__ / "trusted_list").read_text()
    # trusted owners (pytorch, facebookresearch ...) pass without being written down
    assert lists[sf] == lists[torch] == "someone_tiny\n"


def test_model_zoo_load_url_is_the_hub_download(tmp_path, _hub_home):
    import shardflow.utils.model_zoo as model_zoo

    module, src = _torch_linear_file(tmp_path / "server")
    state = model_zoo.load_url(src.as_uri(), progress=False)
    _assert_state_dict_equal(state, module.state_dict())
