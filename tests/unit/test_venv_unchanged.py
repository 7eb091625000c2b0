"""The suite fails when its venv changes during the run (tests/support/venvcheck.py)."""

from __future__ import annotations

from pathlib import Path

from support.venvcheck import changes

_TESTS = Path(__file__).resolve().parents[1]


def test_changes_lists_added_removed_and_reversioned_packages():
    before = {"python-dateutil": "4.0.0", "httpx": "0.28.1", "gone": "1"}
    after = {"python-dateutil": "2.9.0.post0", "httpx": "0.28.1", "boto3": "1.42.89"}
    assert changes(before, after) == ["+ boto3 1.42.89", "- gone 1", "~ python-dateutil 4.0.0 -> 2.9.0.post0"]
    assert changes(after, dict(after)) == []


def test_a_run_that_installs_a_package_fails_and_names_it(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(_TESTS))  # the child imports support.venvcheck
    # A test that "installs" a distribution mid-run: a dist-info appears on sys.path.
    pytester.syspathinsert()
    pytester.makepyfile(
        """
        from pathlib import Path

        def test_installs_something():
            d = Path(__file__).parent / "lazy_pkg-1.2.3.dist-info"
            d.mkdir()
            (d / "METADATA").write_text("Metadata-Version: 2.1\\nName: lazy-pkg\\nVersion: 1.2.3\\n")
        """
    )
    result = pytester.runpytest_subprocess("-p", "support.venvcheck", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*venv changed*", "*+ lazy-pkg 1.2.3*"])
    assert result.ret == 1
    assert "1 passed" in result.stdout.str()
