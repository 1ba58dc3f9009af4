"""What a registry page and a packager need: the README's links and images work outside the
repository (absolute, to the repository of pyproject.toml), and the license pyproject names is
the LICENSE file's."""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def project():
    path = ROOT / "pyproject.toml"
    if not path.exists():
        pytest.skip("pyproject.toml is not beside tests/ (an installed copy of the tests)")
    return tomllib.loads(path.read_text())["project"]


def _links(markdown: str) -> list[str]:
    """Targets of the Markdown links and images outside code blocks and code spans."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text.replace("[`", "[").replace("`]", "]"))
    return re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'<img[^>]*src="([^"]+)"', text)


def test_readme_links_are_absolute_to_the_repository(project):
    """A registry page shows the README away from the repository: a relative image or link
    (``videos/g1_stand.png``) breaks there. Link to the repository (raw files for images)."""
    repo = project["urls"]["Repository"].rstrip("/")
    owner_name = repo.split("github.com/")[-1]
    links = _links((ROOT / project["readme"]).read_text())
    assert any(link.startswith("https://raw.githubusercontent.com/") for link in links)
    relative = [link for link in links if not link.startswith(("https://", "http://", "#"))]
    assert not relative, (
        f"relative links in the README: {relative}; use {repo}/blob/main/PATH "
        f"or https://raw.githubusercontent.com/{owner_name}/main/PATH for images"
    )
    ours = [link for link in links if "wbsim" in link.split("/")[3:5]]
    assert all(
        link.startswith((repo, f"https://raw.githubusercontent.com/{owner_name}/")) for link in ours
    ), ours


def test_links_are_found_outside_code_only():
    text = "![a](videos/a.png) `[x](not/a/link)` [`b.json`](videos/b.json)\n```\n[c](d)\n```"
    assert _links(text) == ["videos/a.png", "videos/b.json"]


def test_license_file_is_the_declared_one(project):
    assert project["license"] == "BSD-3-Clause" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
