"""The documentation site works offline: it loads nothing from the network and renders its maths locally.

Builds the site with ``mkdocs build --strict`` into a temporary folder (a few seconds), then reads
every page and stylesheet it produced. Links a reader clicks (``<a href>``) may point anywhere; what
a browser fetches by itself to show a page (scripts, stylesheets, fonts, icons, images, frames)
must be a file of the site.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).resolve().parent.parent

# The bundled maths renderer and its configuration (see mkdocs.yml).
RENDERER = "javascripts/vendor/mathjax/tex-svg-full.js"
RENDERER_LICENSE = "javascripts/vendor/mathjax/LICENSE"
MATH_CONFIG = "javascripts/mathjax.js"

# <link rel=...> values that name a related page rather than make the browser fetch something.
_NON_LOADING_RELS = {"alternate", "author", "bookmark", "canonical", "help", "license", "me", "next", "prev"}

# Attributes whose URL a browser fetches by itself, per tag.
_FETCHED_ATTRS = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
    "image": ("href", "xlink:href"),
    "use": ("href", "xlink:href"),
}

_CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)"'\s]*))\s*\)""", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"')\s;]+)""", re.IGNORECASE)


def _is_remote(url: str) -> bool:
    """True for a URL the browser would fetch from another host (http, https or protocol-relative)."""
    url = url.strip()
    return url.startswith("//") or urlsplit(url).scheme.lower() in {"http", "https", "ftp", "ws", "wss"}


def _srcset_urls(value: str) -> list[str]:
    return [candidate.split()[0] for candidate in value.split(",") if candidate.strip()]


def _css_urls(css: str) -> Iterator[str]:
    for match in _CSS_URL.finditer(css):
        yield next(group for group in match.groups() if group is not None)
    for match in _CSS_IMPORT.finditer(css):
        yield match.group(1)


class _AssetCollector(HTMLParser):
    """Collects (what, url) for everything a page makes the browser fetch."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.assets: list[tuple[str, str]] = []
        self.scripts: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        if tag == "script" and "src" in values:
            self.scripts.append(values["src"])
        if tag == "link" and "href" in values:
            rels = set(values.get("rel", "").lower().split())
            if not rels or not rels <= _NON_LOADING_RELS:
                self.assets.append((f"<link rel={values.get('rel', '')!r} href>", values["href"]))
        for attr in _FETCHED_ATTRS.get(tag, ()):
            if attr in values:
                urls = _srcset_urls(values[attr]) if attr == "srcset" else [values[attr]]
                self.assets.extend((f"<{tag} {attr}>", url) for url in urls)
        if "style" in values:
            self.assets.extend((f"<{tag} style> url()", url) for url in _css_urls(values["style"]))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.assets.extend(("<style> url()/@import", url) for url in _css_urls(data))


def _parse(page: Path) -> _AssetCollector:
    collector = _AssetCollector()
    collector.feed(page.read_text(encoding="utf-8"))
    collector.close()
    return collector


def _local_target(site: Path, page: Path, url: str) -> Path:
    """The file of the site that a relative or root-relative URL on `page` names."""
    path = unquote(urlsplit(url).path)
    base = site if path.startswith("/") else page.parent
    target = (base / path.lstrip("/")).resolve()
    return target / "index.html" if target.is_dir() else target


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out), "-f", str(REPO / "mkdocs.yml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return out


@pytest.fixture(scope="module")
def pages(site: Path) -> list[Path]:
    found = sorted(site.rglob("*.html"))
    assert found, f"mkdocs built no HTML page into {site}"
    return found


def _math_page(site: Path, name: str) -> Path:
    for page in (site / name / "index.html", site / f"{name}.html"):
        if page.is_file():
            return page
    raise AssertionError(f"the built site has no page {name!r} (looked for {name}/index.html and {name}.html)")


def test_no_page_loads_a_remote_asset(site: Path, pages: list[Path]) -> None:
    remote = [
        f"{page.relative_to(site)}: {what} {url}"
        for page in pages
        for what, url in _parse(page).assets
        if _is_remote(url)
    ]
    assert not remote, "pages load assets from the network (bundle them instead):\n" + "\n".join(remote)


def test_every_local_asset_of_a_page_is_in_the_site(site: Path, pages: list[Path]) -> None:
    missing = [
        f"{page.relative_to(site)}: {what} {url}"
        for page in pages
        for what, url in _parse(page).assets
        if not _is_remote(url)
        and not url.startswith(("data:", "#", "blob:"))
        and not _local_target(site, page, url).is_file()
    ]
    assert not missing, "pages load assets that the built site does not contain:\n" + "\n".join(missing)


def test_no_stylesheet_imports_a_remote_resource(site: Path) -> None:
    stylesheets = sorted(site.rglob("*.css"))
    assert stylesheets, "the built site has no stylesheet"
    remote = [
        f"{sheet.relative_to(site)}: {url}"
        for sheet in stylesheets
        for url in _css_urls(sheet.read_text(encoding="utf-8", errors="replace"))
        if _is_remote(url)
    ]
    assert not remote, "stylesheets fetch url()/@import resources from the network:\n" + "\n".join(remote)


@pytest.mark.parametrize("name", ["model", "api/vfm", "api/planner"])
def test_maths_is_rendered_by_the_bundled_renderer(site: Path, name: str) -> None:
    page = _math_page(site, name)
    html = page.read_text(encoding="utf-8")
    where = page.relative_to(site)
    assert re.search(r'<span class="arithmatex">\\\(', html), f"{where}: no inline arithmatex maths \\(..\\)"
    assert re.search(r'<div class="arithmatex">\\\[', html), f"{where}: no display arithmatex maths \\[..\\]"

    scripts = _parse(page).scripts
    for wanted in (MATH_CONFIG, RENDERER):
        loaded = [src for src in scripts if _local_target(site, page, src) == (site / wanted).resolve()]
        assert loaded, f"{where}: no <script src> loads the site's {wanted}; its scripts are {scripts}"
    config = next(i for i, src in enumerate(scripts) if src.endswith(MATH_CONFIG))
    renderer = next(i for i, src in enumerate(scripts) if src.endswith(RENDERER))
    assert config < renderer, f"{where}: {MATH_CONFIG} must come before {RENDERER} so MathJax reads its config"
    assert (site / RENDERER).stat().st_size > 1_000_000, f"{RENDERER} in the site is not the full MathJax build"
    assert (site / RENDERER_LICENSE).is_file(), f"the site does not ship the renderer's licence {RENDERER_LICENSE}"
