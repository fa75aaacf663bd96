"""Streamlit's private API in one package (attnviz/app/streamlit_patches): every patch registered with what it touches,
its gain and its upstream issue; a Streamlit release that changes what a patch touches fails here by name; the package
refuses any other Streamlit than the one it was checked against; and no module outside it uses the private API.

    python -m attnviz.app.streamlit_patches.registry   # the fingerprints of the installed Streamlit
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import streamlit

from attnviz.app.streamlit_patches import fingerprints, registry, version
from attnviz.app.streamlit_patches.registry import FINGERPRINTS, NONE_FOUND, PATCHES

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attnviz" / "app" / "streamlit_patches"


# ----- what each patch touches in Streamlit is what it was checked against -----------------------------------------


@pytest.mark.parametrize("patch", PATCHES, ids=[patch.name for patch in PATCHES])
def test_what_each_patch_touches_in_streamlit_is_unchanged(patch: registry.Patch) -> None:
    changed = registry.changed(patch)
    assert not changed, (
        f"Streamlit {streamlit.__version__} changed what the patch {patch.name!r} "
        f"(attnviz/app/streamlit_patches/{patch.module}.py) touches: {sorted(changed)}. Check {patch.recheck}; then "
        "record the new fingerprints (python -m attnviz.app.streamlit_patches.registry) and CHECKED_STREAMLIT."
    )


def test_the_registry_is_complete() -> None:
    """Every module of the package that touches Streamlit's private API is a registered patch, with targets that are
    all fingerprinted, a measured gain (or why there is none) and an upstream link (or the words that none was
    found); and every fingerprint belongs to a patch."""
    helpers = {"__init__", "version", "registry", "fingerprints"}
    modules = {path.stem for path in PACKAGE.glob("*.py")} - helpers
    assert {patch.module for patch in PATCHES} == modules
    assert len({patch.name for patch in PATCHES}) == len(PATCHES)
    for patch in PATCHES:
        assert patch.targets and set(patch.targets) <= set(FINGERPRINTS), patch.name
        assert patch.gain and patch.summary and patch.recheck, patch.name
        assert patch.upstream.startswith((NONE_FOUND, "https://github.com/streamlit/streamlit/")), patch.name
    assert set(FINGERPRINTS) == {target for patch in PATCHES for target in patch.targets}


def test_the_recorded_release_is_the_installed_one() -> None:
    """The fingerprints were taken from CHECKED_STREAMLIT; requirements pin the same release."""
    assert streamlit.__version__ == version.CHECKED_STREAMLIT
    pinned = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert f"streamlit=={version.CHECKED_STREAMLIT}" in pinned


FAKE_MODULE = """
import sys
from typing import Final, overload

LIMIT: Final[int] = 512

if sys.platform:
    def helper(x):
        return x
else:
    def helper(x):
        return -x


class Session:
    queue: list = []

    @overload
    def run(self, x: int) -> int: ...
    @overload
    def run(self, x: str) -> str: ...
    def run(self, x):
        return x
"""


@pytest.fixture
def fake_streamlit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package `fakelit` with one module, importable from tmp_path."""
    (tmp_path / "fakelit").mkdir()
    (tmp_path / "fakelit" / "__init__.py").write_text("")
    module = tmp_path / "fakelit" / "session.py"
    module.write_text(FAKE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    return module


def test_a_fingerprint_names_the_code_it_covers_and_changes_with_it(fake_streamlit: Path) -> None:
    """The check itself: a method (the implementation after its overloads), a class attribute, a constant and a
    function defined under `if` are found, and editing one changes its fingerprint and no other's."""
    assert fingerprints.source_of("fakelit.session.Session.run") == "def run(self, x):\n    return x"
    assert fingerprints.source_of("fakelit.session.Session.queue") == "queue: list = []"
    assert fingerprints.source_of("fakelit.session.LIMIT") == "LIMIT: Final[int] = 512"
    assert fingerprints.source_of("fakelit.session.helper").endswith("return -x")  # the last definition
    names = ["fakelit.session.Session.run", "fakelit.session.Session.queue", "fakelit.session.LIMIT"]
    before = {name: fingerprints.fingerprint(name) for name in names}
    fake_streamlit.write_text(FAKE_MODULE.replace("return x\n", "return x + 1\n"))
    after = {name: fingerprints.fingerprint(name) for name in names}
    assert [name for name in names if before[name] != after[name]] == ["fakelit.session.Session.run"]
    with pytest.raises(KeyError, match="no 'stop'"):
        fingerprints.source_of("fakelit.session.Session.stop")


def test_a_changed_or_missing_target_is_reported_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the fingerprint test reports: a target whose source changed (here, a recorded fingerprint that is not
    the installed one) and a target Streamlit no longer has."""
    patch = next(patch for patch in PATCHES if patch.name == "upload_caps")
    add_file = "streamlit.runtime.memory_uploaded_file_manager.MemoryUploadedFileManager.add_file"
    monkeypatch.setitem(FINGERPRINTS, add_file, "0" * 16)
    gone = "streamlit.runtime.memory_uploaded_file_manager.MemoryUploadedFileManager.add_files"
    moved = registry.Patch(**{**patch.__dict__, "targets": (*patch.targets, gone)})
    changed = registry.changed(moved)
    assert changed[add_file] == fingerprints.fingerprint(add_file)
    assert changed[gone].startswith("gone")
    assert set(changed) == {add_file, gone}


def test_a_fingerprint_is_the_same_after_the_patch_replaced_its_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fingerprints are read from Streamlit's files: installing a patch (as the launcher does before any test of the
    same process might run) does not change them."""
    from streamlit.runtime.app_session import AppSession

    from attnviz.app.streamlit_patches import fragments

    target = "streamlit.runtime.app_session.AppSession.request_rerun"
    before = fingerprints.fingerprint(target)
    monkeypatch.setattr(AppSession, "request_rerun", AppSession.request_rerun)
    fragments.keep_input_of_unknown_fragments()
    assert getattr(AppSession.request_rerun, "keeps_unknown_fragment_input", False)
    assert fingerprints.fingerprint(target) == before == FINGERPRINTS[target]


# ----- one version gate ---------------------------------------------------------------------------------------------


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_launcher_refuses_another_streamlit_before_patching_anything() -> None:
    done = run_python(
        "import streamlit; streamlit.__version__ = '1.99.0'\n"
        "from attnviz.app.server import main\n"
        "main(['app.py', '--server.headless', 'true'])\n"
    )
    assert done.returncode != 0
    assert "relies on Streamlit 1.67.0's private API, and this is Streamlit 1.99.0" in done.stderr
    assert "tests/test_streamlit_patches.py" in done.stderr


def test_the_pages_private_reads_refuse_another_streamlit_too() -> None:
    done = run_python("import streamlit; streamlit.__version__ = '1.99.0'\nimport attnviz.app.ui.common\n")
    assert done.returncode != 0 and "this is Streamlit 1.99.0" in done.stderr


INSTALLED = """
import asyncio.base_events, importlib, json
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.runtime import Runtime
from streamlit.web.server.starlette import starlette_server
from attnviz.app import streamlit_patches
from attnviz.app.streamlit_patches import nodelay, script_events, widget_state

streamlit_patches.install()
first = AppSession.request_rerun, AppSession.handle_backmsg, MemoryUploadedFileManager.add_file
streamlit_patches.install()  # a second time changes nothing
rerun = AppSession.request_rerun
widgets = [importlib.import_module(f"streamlit.elements.widgets.{n}") for n in widget_state.WIDGET_MODULES]
print(json.dumps({
    "nodelay": asyncio.base_events._set_nodelay is nodelay._set_nodelay,
    "fragments": getattr(rerun, "keeps_unknown_fragment_input", False),
    "links": getattr(rerun, "reports_ignored_links", False),
    "events": getattr(AppSession._on_scriptrunner_event, "batched", False),
    "send": Runtime._enqueued_some_message is script_events._enqueued_some_message,
    "widgets": all(getattr(m.get_session_state, "one_key", False) for m in widgets),
    "developer": getattr(AppSession.handle_backmsg, "drops_developer_messages", False),
    "uploads": getattr(MemoryUploadedFileManager.add_file, "capped", False),
    "long_links": getattr(starlette_server._get_uvicorn_config_kwargs, "reads_long_links", False),
    "once": first == (AppSession.request_rerun, AppSession.handle_backmsg, MemoryUploadedFileManager.add_file),
}))
"""


def test_install_applies_every_patch_once() -> None:
    """What `python -m attnviz.app.server` installs (in a process of its own: the patches are process-wide)."""
    done = run_python(INSTALLED)
    assert done.returncode == 0, done.stderr[-2000:]
    applied = json.loads(done.stdout)
    assert applied == dict.fromkeys(applied, True) and len(applied) == 10


# ----- nobody else uses Streamlit's private API ---------------------------------------------------------------------


def banned_names() -> list[str]:
    """Streamlit's private modules and attributes, as pyproject.toml bans them (ruff's banned-api, TID251)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return sorted(config["tool"]["ruff"]["lint"]["flake8-tidy-imports"]["banned-api"])


def _banned_prefix(name: str, banned: list[str]) -> str | None:
    """The banned module or attribute that `name` is, or is inside of; None when it is public."""
    return next((prefix for prefix in banned if name == prefix or name.startswith(prefix + ".")), None)


def _streamlit_names(tree: ast.AST) -> dict[str, str]:
    """Local name -> the Streamlit object it is bound to by an import anywhere in the file (lazy ones included)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "streamlit":
                    bound[alias.asname or "streamlit"] = alias.name if alias.asname else "streamlit"
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "streamlit":
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _dotted(node: ast.expr, bound: dict[str, str]) -> str | None:
    """`st.delta_generator.DeltaGenerator` as "streamlit.delta_generator.DeltaGenerator"; None if not Streamlit's."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in bound:
        return ".".join([bound[node.id], *reversed(parts)])
    return None


def _root(node: ast.expr) -> ast.expr:
    """The name an expression's chain of attributes, calls and subscripts starts from."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def private_uses(path: Path, banned: list[str], root: Path = ROOT) -> list[str]:
    """`path:line: what` for each use of Streamlit's private API in a file: an import of a banned module (inside
    functions too, and by importlib), a banned attribute reached from Streamlit, or an underscore attribute of an
    object reached from Streamlit (`st._main`, `get_session_state()._state`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bound, where, found = _streamlit_names(tree), path.relative_to(root).as_posix(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found |= {f"{where}:{node.lineno}: {name}" for name in modules if _banned_prefix(name, banned)}
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            name = node.args[0].value
            if called in ("import_module", "__import__") and isinstance(name, str) and _banned_prefix(name, banned):
                found.add(f"{where}:{node.lineno}: {name}")
        elif isinstance(node, ast.Attribute):
            prefix = _banned_prefix(_dotted(node, bound) or "", banned)
            if prefix:
                found.add(f"{where}:{node.lineno}: {prefix}")
            private, start = node.attr.startswith("_") and not node.attr.startswith("__"), _root(node.value)
            if private and isinstance(start, ast.Name) and start.id in bound:
                found.add(f"{where}:{node.lineno}: .{node.attr} of {bound[start.id]}")
    return sorted(found)


def app_files(root: Path = ROOT) -> list[Path]:
    """The app's code outside attnviz/app/streamlit_patches: the package, app.py and the page files (app_pages/)."""
    files = [
        *sorted((root / "attnviz").rglob("*.py")),
        *sorted(root.glob("*.py")),
        *sorted(root.glob("app_pages/*.py")),
    ]
    return [path for path in files if "streamlit_patches" not in path.relative_to(root).parts]


def test_no_module_outside_the_package_uses_streamlits_private_api() -> None:
    banned = banned_names()
    assert {"streamlit.runtime", "streamlit.web", "streamlit.elements", "streamlit.proto"} <= set(banned)
    assert len(app_files()) > 50
    assert [use for path in app_files() for use in private_uses(path, banned)] == []


PRIVATE_USES = """
import importlib
import streamlit as st
import streamlit.runtime.scriptrunner as scriptrunner
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.state.session_state_proxy import get_session_state

def draw(where: st.delta_generator.DeltaGenerator) -> None:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    st._main.markdown("x")
    get_session_state()._state
    importlib.import_module("streamlit.web.cli")
    st.components.v2.component("ok", js="")
    fig._data
    raise StreamlitAPIException("public")
"""


def test_the_scan_finds_each_kind_of_private_use(tmp_path: Path) -> None:
    """The check itself: top-level, lazy and importlib imports, a private module reached as an attribute, and
    underscore attributes of Streamlit's objects are found; the public API (st.components.v2.component,
    streamlit.errors) and another library's underscore attribute are not, nor anything inside the package."""
    (tmp_path / "attnviz" / "app" / "streamlit_patches").mkdir(parents=True)
    (tmp_path / "attnviz" / "app" / "page.py").write_text(PRIVATE_USES)
    (tmp_path / "attnviz" / "app" / "streamlit_patches" / "patch.py").write_text(PRIVATE_USES)
    (tmp_path / "app.py").write_text("import streamlit as st\nst.title('x')\n")
    assert [path.relative_to(tmp_path).as_posix() for path in app_files(tmp_path)] == ["attnviz/app/page.py", "app.py"]
    uses = [use for path in app_files(tmp_path) for use in private_uses(path, banned_names(), tmp_path)]
    assert set(uses) == {
        "attnviz/app/page.py:4: streamlit.runtime.scriptrunner",
        "attnviz/app/page.py:6: streamlit.runtime.state.session_state_proxy",
        "attnviz/app/page.py:8: streamlit.delta_generator",
        "attnviz/app/page.py:9: streamlit.proto.ForwardMsg_pb2",
        "attnviz/app/page.py:10: streamlit._main",
        "attnviz/app/page.py:10: ._main of streamlit",
        "attnviz/app/page.py:11: ._state of streamlit.runtime.state.session_state_proxy.get_session_state",
        "attnviz/app/page.py:12: streamlit.web.cli",
    }
    assert len(uses) == 8
