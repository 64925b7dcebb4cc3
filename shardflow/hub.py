"""``torch.hub``: pretrained weights from URLs and models from ``hubconf.py`` repositories,
with torch 2.13's signatures, cache layout and behaviour.

Cache: ``get_dir()`` is ``set_dir``'s folder, else ``$TORCH_HOME/hub`` (``TORCH_HOME`` defaults
to ``$XDG_CACHE_HOME/torch``, that to ``~/.cache/torch``; read by ``_config.hub_environment``).
Weights live in ``<hub_dir>/checkpoints/``, GitHub repositories in
``<hub_dir>/<owner>_<name>_<ref>/`` — the same places torch uses, so a cache filled by either
serves both.

``load_state_dict_from_url(url)``: the file name is the URL path's last component (or
``file_name``); a file of that name already in the cache is loaded without any download.
Otherwise ``download_url_to_file`` streams the URL (urllib: http(s), ftp and file:// URLs) in
128 KiB chunks into ``<dst>.<uuid>.partial`` next to the destination, hashing as it goes, and
renames it onto the destination only when complete (and, with ``check_hash``, only when the
SHA-256 starts with the hex prefix after the '-' in the file name, ``resnet18-f37072fd.pth``):
an interrupted or corrupt download never leaves a cached file that later calls would trust.
The file is read by ``shardflow.load`` (torch.save zip files, from PyTorch or shardflow, and
safetensors); a zip holding exactly one file (torch's pre-1.6 hub convention) is extracted
and that file loaded, with torch's FutureWarning.

``load(repo_or_dir, model, *args, source=..., **kwargs)``: ``source='local'`` imports
``<dir>/hubconf.py`` (with the folder first on ``sys.path`` so its own imports resolve),
checks that every module named in its ``dependencies`` list is importable, and returns
``hubconf.<model>(*args, **kwargs)``. ``source='github'`` (``owner/name[:ref]``, ref default
``main`` if that branch exists else ``master``) first makes sure the repository is in the
cache: the trust check (``trust_repo``: torch's ``trusted_list`` file and prompt), the GitHub
API check that the ref belongs to that repository (unless ``skip_validation``), then the
``/zipball/<ref>`` archive is downloaded, extracted (refusing entries that escape the cache
folder) and renamed to ``<owner>_<name>_<ref>``. These need the network; a download that
fails names its URL. ``list`` / ``help`` answer the entry points and a docstring of a GitHub
repository's ``hubconf.py`` the same way.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse

from . import _config
from .serialization import load as _load_checkpoint

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url",
           "set_dir"]

# matches bfd8deac from resnet18-bfd8deac.pth (torch's pattern, kept as is: programs import it)
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_PATH_SEP_PATTERN = re.compile(r"[/\\]")
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
_GITHUB = "https://github.com"
_GITHUB_API = "https://api.github.com"
_hub_dir: str | None = None  # set_dir's folder


def __getattr__(name: str):
    # ``torch.hub.tqdm`` is tqdm's class (programs import it from here); imported on first use
    # because tqdm costs ~30 ms and most programs never download
    if name == "tqdm":
        from tqdm import tqdm

        return tqdm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- cache folders ---------------------------------------------------------------------------

def _warn_deprecated_variable(name: str) -> None:
    if name in _config.hub_environment().deprecated:
        warnings.warn(f"{name} is deprecated, please use env TORCH_HOME instead", stacklevel=3)


def _get_torch_home() -> str:
    """``$TORCH_HOME``, default ``$XDG_CACHE_HOME/torch``, default ``~/.cache/torch``."""
    return _config.hub_environment().torch_home


def get_dir() -> str:
    """The hub cache folder: ``set_dir``'s folder if it was called, else ``$TORCH_HOME/hub``
    (``TORCH_HOME`` defaults to ``$XDG_CACHE_HOME/torch``, ``XDG_CACHE_HOME`` to ``~/.cache``)."""
    _warn_deprecated_variable("TORCH_HUB")
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use folder ``d`` (``~`` expanded) for downloaded weights and repositories from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def _remove_if_exists(path: str) -> None:
    if os.path.exists(path):
        if os.path.isfile(path):
            os.remove(path)
        else:
            shutil.rmtree(path)


# -- downloads -------------------------------------------------------------------------------

def _open_partial_file(dst: str):
    """A new ``<dst>.<uuid>.partial`` next to ``dst`` (same file system, so the final rename
    is atomic). Not NamedTemporaryFile, whose 0600 permissions the cached file would keep."""
    import uuid

    for _ in range(tempfile.TMP_MAX):
        tmp_dst = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            return open(tmp_dst, "xb")  # noqa: SIM115 (closed by the caller's finally)
        except FileExistsError:
            continue
        except FileNotFoundError:
            raise FileNotFoundError(
                errno.ENOENT, f"download_url_to_file: the folder of dst {dst!r} does not exist; "
                "create it first (os.makedirs) or pass a path in an existing folder", dst) from None
    raise FileExistsError(errno.EEXIST, "No usable temporary file name found")


def _urlopen(url_or_request, url: str, offline_fix: str):
    """urlopen whose failures name the URL and keep their type (programs catch HTTPError and
    read its ``code``; a URLError's reason alone does not say which download failed)."""
    from urllib.request import urlopen

    try:
        return urlopen(url_or_request)
    except HTTPError as e:
        raise HTTPError(url, e.code, f"{e.reason} (fetching {url})", e.headers, None) from e
    except URLError as e:
        raise URLError(f"{e.reason} (fetching {url}; check the URL and the network connection, "
                       f"{offline_fix})") from e


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download ``url`` to the path ``dst`` (module docstring: through a ``.partial`` file
    renamed on success). ``hash_prefix``: the SHA-256 hex digest must start with it, else
    RuntimeError and ``dst`` is untouched. ``progress``: a tqdm bar on stderr."""
    _download(url, dst, hash_prefix, progress)


def _download(url: str, dst: str, hash_prefix: str | None, progress: bool,
              offline_fix: str = "or copy the file to its place in the cache folder "
              "(hub.get_dir()) by hand") -> None:
    """``download_url_to_file``; ``offline_fix`` ends the message of a URLError."""
    from urllib.request import Request

    from tqdm import tqdm

    dst = os.path.expanduser(dst)
    f = _open_partial_file(dst)
    req = Request(url, headers={"User-Agent": "torch.hub"})
    try:
        with _urlopen(req, url, offline_fix) as u:
            content_length = u.info().get_all("Content-Length")
            file_size = int(content_length[0]) if content_length else None
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            with tqdm(total=file_size, disable=not progress, unit="B", unit_scale=True,
                      unit_divisor=1024) as pbar:
                while True:
                    buffer = u.read(READ_DATA_CHUNK)
                    if len(buffer) == 0:
                        break
                    f.write(buffer)
                    if sha256 is not None:
                        sha256.update(buffer)
                    pbar.update(len(buffer))
            f.close()
            if sha256 is not None and hash_prefix is not None:
                digest = sha256.hexdigest()
                if digest[: len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(
                        f'invalid hash value (expected "{hash_prefix}", got "{digest}"): the file '
                        f"downloaded from {url} is not the one its name promises, so it was not kept "
                        f"at {dst}. Check the URL; pass check_hash=False to accept it anyway")
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _is_legacy_zip_format(filename: str) -> bool:
    """A zip with a single file in it: torch.hub's pre-1.6 way of shipping a checkpoint (a
    torch.save zip file itself has several entries)."""
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infolist = zf.infolist()
        return len(infolist) == 1 and not infolist[0].is_dir()
    return False


def _legacy_zip_load(filename: str, model_dir: str, map_location, weights_only: bool):
    warnings.warn(
        "Falling back to the old format < 1.6. This support will be deprecated in favor of default "
        "zipfile format introduced in 1.6. Please redo torch.save() to save it in the new zipfile "
        "format.", FutureWarning, stacklevel=3)
    with zipfile.ZipFile(filename) as f:
        members = f.infolist()
        _safe_extract_zip(f, model_dir)
    extracted_file = os.path.join(model_dir, members[0].filename)
    return _load_checkpoint(extracted_file, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """Load the checkpoint at ``url``, downloading it into ``model_dir`` (default
    ``<get_dir()>/checkpoints``) unless a file of its name is already there.

    ``check_hash``: the file name (``file_name``, else the URL's) follows
    ``name-<sha256 prefix>.ext`` and the download must hash to that prefix. ``map_location``
    and ``weights_only`` go to ``shardflow.load`` (torch's default here is
    ``weights_only=False``: the URL is trusted)."""
    _warn_deprecated_variable("TORCH_MODEL_ZOO")
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)

    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)

    if _is_legacy_zip_format(cached_file):
        return _legacy_zip_load(cached_file, model_dir, map_location, weights_only)
    return _load_checkpoint(cached_file, map_location=map_location, weights_only=weights_only)


# -- hubconf.py repositories -----------------------------------------------------------------

@contextlib.contextmanager
def _add_to_sys_path(path: str):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name: str, path: str):
    import importlib.util

    if not os.path.isfile(path):
        raise FileNotFoundError(
            errno.ENOENT, f"no {MODULE_HUBCONF} at {path}: hub.load(..., source='local') takes a folder "
            f"that contains {MODULE_HUBCONF} (its entry points); check repo_or_dir", path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _import_hubconf(repo_dir: str):
    with _add_to_sys_path(repo_dir):
        return _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))


def _entry_points(module) -> builtins.list[str]:
    # names starting with '_' are the repository's helpers, not entry points (torch's rule)
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def _check_dependencies(module) -> None:
    import importlib.util

    dependencies = getattr(module, VAR_DEPENDENCY, None)
    if dependencies is not None:
        missing = [pkg for pkg in dependencies if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)} (listed in the "
                               f"repository's {MODULE_HUBCONF} `{VAR_DEPENDENCY}`); install them "
                               f"with pip install {' '.join(missing)}")


def _load_entry_from_hubconf(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name, got "
                         f"{type(model).__name__}")
    # hubconf.py is imported before its dependencies can be read: a missing package imported
    # at its top level fails with Python's own ImportError, as in torch
    _check_dependencies(module)
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf ({module.__file__}); its entry "
                           f"points are: {', '.join(_entry_points(module)) or 'none'}")
    return func


def _load_local(hubconf_dir: str, model: str, *args, **kwargs):
    """``hubconf.<model>(*args, **kwargs)`` from the folder ``hubconf_dir``, with the folder on
    ``sys.path`` while the entry point runs (it may import the repository's modules)."""
    with _add_to_sys_path(hubconf_dir):
        hub_module = _import_module(MODULE_HUBCONF, os.path.join(hubconf_dir, MODULE_HUBCONF))
        entry = _load_entry_from_hubconf(hub_module, model)
        return entry(*args, **kwargs)


def _git_archive_link(repo_owner: str, repo_name: str, ref: str) -> str:
    return f"{_GITHUB}/{repo_owner}/{repo_name}/zipball/{ref}"


def _parse_repo_info(github: str) -> tuple[str, str, str]:
    """``owner/name[:ref]``; without a ref, ``main`` if GitHub has that branch, else ``master``
    (offline: whichever of the two is in the cache)."""
    repo_info, ref = github.split(":") if ":" in github else (github, None)
    try:
        repo_owner, repo_name = repo_info.split("/")
    except ValueError:
        raise ValueError(f"hub: expected a GitHub repository as 'owner/name[:ref]' (e.g. "
                         f"'pytorch/vision:v0.10.0'), got {github!r}; for a folder on this "
                         "machine pass source='local'") from None
    if ref is None:
        from urllib.request import urlopen

        url = f"{_GITHUB}/{repo_owner}/{repo_name}/tree/main/"
        try:
            with urlopen(url):
                ref = "main"
        except HTTPError as e:
            if e.code != 404:
                raise
            ref = "master"
        except URLError as e:
            for possible_ref in ("main", "master"):
                if os.path.exists(f"{get_dir()}/{repo_owner}_{repo_name}_{possible_ref}"):
                    ref = possible_ref
                    break
            if ref is None:
                raise RuntimeError(
                    "It looks like there is no internet connection and the repo could not be found "
                    f"in the cache ({get_dir()}): {url} could not be reached ({e.reason}). Connect "
                    f"to the network, or load a local copy with hub.load(path, ..., source='local')"
                ) from e
    return repo_owner, repo_name, ref


def _read_json(url: str, headers: dict[str, str]):
    from urllib.request import Request

    with _urlopen(Request(url, headers=headers), url,
                  "or pass skip_validation=True to skip this GitHub API check") as r:
        return json.loads(r.read().decode(r.headers.get_content_charset("utf-8")))


def _validate_not_a_forked_repo(repo_owner: str, repo_name: str, ref: str) -> None:
    """The ref must be a branch, tag or commit of this repository (not of a fork, which GitHub
    would also serve under this name): GitHub's API, pages of 100 branches then tags."""
    headers = {"Accept": "application/vnd.github.v3+json"}
    token = _config.hub_environment().github_token
    if token is not None:
        headers["Authorization"] = f"token {token}"
    for url_prefix in (f"{_GITHUB_API}/repos/{repo_owner}/{repo_name}/branches",
                       f"{_GITHUB_API}/repos/{repo_owner}/{repo_name}/tags"):
        page = 0
        while True:
            page += 1
            url = f"{url_prefix}?per_page=100&page={page}"
            try:
                response = _read_json(url, headers)
            except HTTPError:
                if "Authorization" not in headers:
                    raise
                headers.pop("Authorization")  # retry without a token that lacks permissions
                response = _read_json(url, headers)
            if not response:
                break
            for br in response:
                if br["name"] == ref or br["commit"]["sha"].startswith(ref):
                    return
    raise ValueError(
        f"Cannot find {ref} in {_GITHUB}/{repo_owner}/{repo_name}. If it's a commit from a forked "
        "repo, please call hub.load() with forked repo directly.")


class UntrustedRepositoryError(Exception):
    """The user declined to trust a GitHub repository (torch raises a plain Exception)."""


def _check_repo_is_trusted(repo_owner: str, repo_name: str, owner_name_branch: str,
                           trust_repo) -> None:
    """torch's rule: trusted are the owners in ``_TRUSTED_REPO_OWNERS``, repositories in
    ``<hub_dir>/trusted_list`` and any already in the cache. ``trust_repo=False``, or
    ``"check"`` on an untrusted one, asks on stdin; a trusted answer is added to the list."""
    hub_dir = get_dir()
    filepath = os.path.join(hub_dir, "trusted_list")
    if not os.path.exists(filepath):
        Path(filepath).touch()
    with open(filepath) as file:
        trusted_repos = tuple(line.strip() for line in file)
    trusted_repos_legacy = next(os.walk(hub_dir))[1]  # already downloaded: trusted

    owner_name = "_".join([repo_owner, repo_name])
    is_trusted = (owner_name in trusted_repos or owner_name_branch in trusted_repos_legacy
                  or repo_owner in _TRUSTED_REPO_OWNERS)
    if (trust_repo is False) or (trust_repo == "check" and not is_trusted):
        response = input(
            f"The repository {owner_name} does not belong to the list of trusted repositories and "
            "as such cannot be downloaded. Do you trust this repository and wish to add it to the "
            "trusted list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise UntrustedRepositoryError(
                f"Untrusted repository. {owner_name} was not trusted, so its code was not "
                "downloaded; pass trust_repo=True to trust it")
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(filepath, "a") as file:
            file.write(owner_name + "\n")


def _safe_extract_zip(zip_file: zipfile.ZipFile, extract_to: str) -> None:
    """Extract every entry, refusing (ValueError, before writing it) one whose path is absolute
    or leaves ``extract_to`` (zip-slip)."""
    root = Path(extract_to).resolve(strict=False)
    for member in zip_file.infolist():
        filename = os.path.normpath(member.filename)
        if filename.startswith(("/", "\\")) or (len(filename) >= 2 and filename[1] == ":"
                                                and filename[0].isalpha()):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(_PATH_SEP_PATTERN, filename):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (root / filename).resolve(strict=False).is_relative_to(root):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        zip_file.extract(member, root)


def _install_repo_archive(url: str, hub_dir: str, zip_name: str, repo_dir: str) -> None:
    """Download the repository zip at ``url`` to ``<hub_dir>/<zip_name>.zip``, extract it (its
    single top folder, GitHub's ``owner-name-sha/``) and rename that folder to ``repo_dir``."""
    cached_file = os.path.join(hub_dir, zip_name + ".zip")
    _remove_if_exists(cached_file)
    sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
    _download(url, cached_file, None, progress=False, offline_fix=(
        f"or put a copy of the repository at {repo_dir} (the cache hub.load reads), or load a "
        "local copy with hub.load(path, ..., source='local')"))
    with zipfile.ZipFile(cached_file) as cached_zipfile:
        extracted_repo = os.path.join(hub_dir, cached_zipfile.infolist()[0].filename)
        _remove_if_exists(extracted_repo)
        _safe_extract_zip(cached_zipfile, hub_dir)
    _remove_if_exists(cached_file)
    _remove_if_exists(repo_dir)
    shutil.move(extracted_repo, repo_dir)


def _get_cache_or_reload(github: str, force_reload: bool, trust_repo, verbose: bool = True,
                         skip_validation: bool = False) -> str:
    """The cached folder of ``owner/name[:ref]``, downloading it first when it is missing or
    ``force_reload`` (module docstring)."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    repo_owner, repo_name, ref = _parse_repo_info(github)
    normalized_br = ref.replace("/", "_")  # branch names may hold '/', folder names may not
    owner_name_branch = "_".join([repo_owner, repo_name, normalized_br])
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    _check_repo_is_trusted(repo_owner, repo_name, owner_name_branch, trust_repo=trust_repo)

    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_forked_repo(repo_owner, repo_name, ref)
    try:
        _install_repo_archive(_git_archive_link(repo_owner, repo_name, ref), hub_dir,
                              normalized_br, repo_dir)
    except HTTPError as err:
        if err.code != 300:
            raise
        # 300 Multiple Choices: the ref is both a tag and a branch; like git, take the branch
        warnings.warn(
            f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the repo? "
            "Torchhub will now assume that it's a branch. You can disambiguate tags and branches by "
            "explicitly passing refs/heads/branch_name or refs/tags/tag_name as the ref. That might "
            "require using skip_validation=True.", stacklevel=3)
        _install_repo_archive(_git_archive_link(repo_owner, repo_name, f"refs/heads/{ref}"),
                              hub_dir, normalized_br, repo_dir)
    return repo_dir


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):
    """The entry points (public callables of ``hubconf.py``) of GitHub repository
    ``owner/name[:ref]``, downloading it into the cache if needed."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=verbose,
                                    skip_validation=skip_validation)
    return _entry_points(_import_hubconf(repo_dir))


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """The docstring of entry point ``model`` of GitHub repository ``owner/name[:ref]``."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=True,
                                    skip_validation=skip_validation)
    return _load_entry_from_hubconf(_import_hubconf(repo_dir), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """``hubconf.<model>(*args, **kwargs)`` of a GitHub repository (``source='github'``,
    ``repo_or_dir`` is ``owner/name[:ref]``) or of a folder (``source='local'``).
    ``trust_repo``, ``force_reload``, ``verbose`` and ``skip_validation`` apply to GitHub only."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose=verbose,
                                           skip_validation=skip_validation)
    return _load_local(repo_or_dir, model, *args, **kwargs)
