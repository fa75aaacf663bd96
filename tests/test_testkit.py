"""The test kit's own reach into Streamlit: what it relies on still holds in the Streamlit the tests run."""

from __future__ import annotations

from streamlit.components.v2 import manifest_scanner
from streamlit.testing.v1 import AppTest

from testkit.apptest import scan_installed_components_once


def test_new_apptests_share_one_scan_of_the_installed_components():
    """tests/conftest.py caches the scan; each new AppTest's first run must go through the cached function (were
    Streamlit to bind it elsewhere, every AppTest would scan again and the suite would be ~1 s a session slower)."""
    scan_installed_components_once()
    scan_installed_components_once()  # a second call does not wrap the cache in another
    cached = manifest_scanner.scan_component_manifests
    assert cached.__wrapped__.__module__ == manifest_scanner.__name__
    before = cached.cache_info()
    for _ in range(2):
        AppTest.from_string("import streamlit as st\nst.write(1)").run()
    after = cached.cache_info()
    assert after.hits + after.misses == before.hits + before.misses + 2
    assert after.misses <= 1
