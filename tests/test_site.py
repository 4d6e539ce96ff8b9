"""The rendered book (built once per session at ``ci`` scale): pages, links, figures, offline math, and how it looks
in a real headless Chromium."""
from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from bs4 import BeautifulSoup

from compendium import book, chapters
from compendium.base import repository_root

ROOT = repository_root()
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def toc_files() -> list[str]:
    """Every document of ``_toc.yml``: the root and each ``file`` entry, at any depth."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return files


PAGES = toc_files()
CHAPTER_PAGES = [str(Path(c.notebook).with_suffix("")) for c in chapters.registry().values()]


@functools.lru_cache(maxsize=None)
def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@functools.lru_cache(maxsize=None)
def ids(path: Path) -> frozenset[str]:
    page = soup(path)
    named = page.find_all("a", attrs={"name": True})
    return frozenset(e["id"] for e in page.find_all(id=True)) | frozenset(e["name"] for e in named)


def internal_links(site: Path, page: Path):
    """(attribute value, target file, fragment) for every href/src of ``page`` that points inside the site."""
    for element in soup(page).find_all(lambda tag: tag.has_attr("href") or tag.has_attr("src")):
        for attribute in ("href", "src"):
            url = element.get(attribute)
            if not url:
                continue
            parts = urlsplit(url)
            if parts.scheme or parts.netloc:
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            yield url, target, parts.fragment


def test_one_page_per_toc_entry(site: Path) -> None:
    missing = [f for f in PAGES if not (site / f"{f}.html").is_file()]
    assert not missing, f"pages of _toc.yml not rendered: {missing}"
    assert (site / "index.html").is_file()


def test_no_broken_internal_links(site: Path) -> None:
    broken = []
    for page in sorted(site.rglob("*.html")):
        if page.relative_to(site).parts[0] in ("_static", "_sources"):  # theme templates and source copies
            continue
        for url, target, fragment in internal_links(site, page):
            where = f"{page.relative_to(site)}: {url}"
            if site.resolve() not in target.parents:
                broken.append(f"{where} (outside the site)")
            elif not target.is_file():
                broken.append(f"{where} (no such file)")
            elif fragment and target.suffix == ".html" and unquote(fragment) not in ids(target):
                broken.append(f"{where} (no element with id {fragment!r})")
    assert not broken, "broken internal links:\n" + "\n".join(broken)


def test_mathjax_is_local(site: Path) -> None:
    local = 0
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"""(https?:)?//[^"'\s>]*mathjax""", text, re.IGNORECASE), f"{page}: MathJax from a CDN"
        local += "_static/mathjax/tex-svg.js" in text
    assert local, "no page loads the vendored MathJax"
    assert (site / "_static" / "mathjax" / "tex-svg.js").is_file()


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_chapter_pages_have_figures(site: Path, page: str) -> None:
    html = site / f"{page}.html"
    images = [img.get("src", "") for img in soup(html).find_all("img")]
    existing = [src for src in images if src and not urlsplit(src).scheme and (html.parent / unquote(src)).is_file()]
    assert existing, f"{page}: no figure (an <img> whose file exists); found {images}"


def test_errata_tables_render_whole_rows(site: Path) -> None:
    """Every row of the errata tables has as many cells as the header (a stray line break inside a Markdown row, e.g.
    a ``\\neq`` written as a newline, silently cuts the row and drops the rest of it from the table)."""
    tables = soup(site / "book" / "errata.html").find_all("table")
    assert len(tables) >= 4, f"the errata page has {len(tables)} tables"
    for table in tables:
        widths = [len(row.find_all(["td", "th"])) for row in table.find_all("tr")]
        assert len(set(widths)) == 1 and len(widths) > 1, f"errata table {table.get('id')}: row widths {widths}"


def test_paper_chapters_are_numbered_as_the_intro_numbers_the_papers(site: Path) -> None:
    """The reproduce page is not numbered, so Paper k is chapter k: its exercises are Exercise k.1, k.2, ..."""
    for k, page in enumerate(["ziller2024", "mean_to_extreme", "hcr", "transfer_learned", "diffusion"], start=1):
        text = (site / "notebooks" / f"{page}.html").read_text()
        assert f"Exercise {k}.1" in text and not re.search(rf"Exercise (?!{k}\.)\d+\.\d", text), page


def test_reproduce_page_shows_this_builds_chapter_times(site: Path, executed_notebooks: dict) -> None:
    """The build fills the reproduce page's table from the executed notebooks: one row per chapter, its scale and
    the seconds it recorded."""
    table = next(t for t in soup(site / "book" / "reproduce.html").find_all("table")
                 if "execution time" in t.get_text())
    rows = {row.find_all("td")[0].get_text(strip=True): [c.get_text(strip=True) for c in row.find_all("td")]
            for row in table.find_all("tr") if row.find_all("td")}
    assert set(rows) == {c.title for c in chapters.registry().values()}
    for key, path in executed_notebooks.items():
        recorded = book.recorded_seconds(path)
        assert recorded is not None and recorded > 0
        assert 0 < book.recorded_seconds(path, cpu=True) < 10 * recorded  # the kernel's CPU time, for the order
        assert rows[chapters.chapter(key).title][1:3] == ["ci", book.duration_text(recorded)]


# ---------------------------------------------------------------------------------------------------------------
# A real browser
# ---------------------------------------------------------------------------------------------------------------
def start_browser(profile: Path):
    """Headless Chromium through selenium, its profile in ``profile``; skipped when not installed (failed if
    COMPENDIUM_REQUIRE_BROWSER=1)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        reason = f"{', '.join(missing)} not found; install Debian's chromium and chromium-driver (`make test` does)"
        if os.environ.get("COMPENDIUM_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     f"--user-data-dir={profile}", "--window-size=1280,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_script_timeout(60)
    driver.set_page_load_timeout(60)
    return driver


@pytest.fixture(scope="module")
def server(site: Path):
    """The site over http on 127.0.0.1 (a free port), as a reader's browser would load it."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


WAIT_FOR_MATHJAX = """
const done = arguments[arguments.length - 1];
const mj = window.MathJax;
if (!mj || !mj.startup || !mj.startup.promise) { done("no MathJax"); return; }
mj.startup.promise.then(() => done("ok"), (e) => done("error: " + e));
"""

INSPECT = """
const article = document.querySelector("main") || document.body;
const prose = article.cloneNode(true);
prose.querySelectorAll("pre, code, script, style, .highlight, mjx-container").forEach((e) => e.remove());
return {
  brokenImages: [...document.images].filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => i.src),
  images: document.images.length,
  math: document.querySelectorAll(".math").length,
  unrendered: [...document.querySelectorAll(".math")].filter((e) => !e.querySelector("mjx-container")).length,
  rendered: document.querySelectorAll("mjx-container").length,
  errors: [...document.querySelectorAll("mjx-merror")].map((e) => e.textContent),
  rawTex: ["\\\\(", "\\\\[", "$$", "$\\\\"].flatMap((s) => {
    const at = prose.textContent.indexOf(s);
    return at < 0 ? [] : [`${s} in "${prose.textContent.slice(Math.max(0, at - 40), at + 40).replace(/\\s+/g, " ")}"`];
  }),
};
"""

# Everything a reader must see whole: the code cells, their outputs (tables, printed lines), the theorem boxes with
# their display equations and the prose's code blocks (a command to copy). A block whose content is wider than its box
# is cut off or hidden behind a scroll bar (inline math may overhang its line box by a subscript's width, which hides
# nothing).
OVERFLOW = """
const boxes = document.querySelectorAll(
  "div.cell_output, div.cell_output *, div.proof, div.proof *, div.admonition, div.admonition *, main pre");
return [...boxes]
  .filter((e) => !e.closest("mjx-assistive-mml"))  // MathJax's copy for screen readers, clipped to nothing
  .filter((e) => e.tagName === "MJX-CONTAINER" ? e.getAttribute("display") === "true"
                                               : !getComputedStyle(e).display.startsWith("inline"))
  .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 2)
  .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join(".")}: content ${e.scrollWidth} px in a `
              + `${e.clientWidth} px box: "${(e.textContent || "").trim().slice(0, 60)}"`);
"""


# What fails at every width (layout.js and custom.css's "scroll cues" keep these true):
# - a box whose content is wider than it (a table, a code cell, a formula) and that does not fade out at its edge:
#   a phone's scroll bars are hidden, so without the cue the hidden columns or the formula's end are not there;
# - a caption whose text runs past the box it is shown in (a table's caption is as wide as the table);
# - a formula drawn below 10 px, or smaller than the text around it (shrunk to fit its box instead of scrolling);
# - punctuation after an inline formula that starts a line of its own.
LAYOUT = """
const article = document.querySelector("main") || document.body;
const root = document.documentElement;
const describe = (e) => `${e.tagName.toLowerCase()}.${[...e.classList].join(".")}: "`
  + `${(e.getAttribute("aria-label") || e.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 60)}"`;
const scrollsX = (e) => ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
const cue = (e) => [getComputedStyle(e).maskImage, getComputedStyle(e).webkitMaskImage]
  .some((m) => m && m.includes("gradient"));
const cueless = [...article.querySelectorAll("*")]
  .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 2 && scrollsX(e) && !cue(e))
  .map((e) => `${describe(e)} (content ${e.scrollWidth} px in a ${e.clientWidth} px box)`);
const visibleBox = (e) => {
  for (let a = e.parentElement; a && a !== root; a = a.parentElement) {
    if (getComputedStyle(a).overflowX !== "visible") return a.getBoundingClientRect();
  }
  return {left: 0, right: root.clientWidth};
};
const cutCaptions = [...article.querySelectorAll("caption, figcaption, div.result-table > p:first-child")]
  .filter((c) => {
    const box = visibleBox(c);
    const text = document.createRange();
    text.selectNodeContents(c);
    return [...text.getClientRects()].some((r) => r.width > 0 && (r.right > box.right + 2 || r.left < box.left - 2));
  })
  .map(describe);
const probe = document.createElement("div");
probe.style.cssText = "position: absolute; visibility: hidden; width: 100ex; font-size: 100px";
article.appendChild(probe);
const exPerEm = probe.getBoundingClientRect().width / 100 / 100;
probe.remove();
// a formula's size: its text's font size times the scale it is drawn at (MathJax sizes its SVG in ex of the text)
const smallMath = [...article.querySelectorAll("mjx-container > svg")]
  .filter((s) => /ex$/.test(s.getAttribute("width") || "") && s.getBoundingClientRect().width > 0)
  .map((s) => [s, s.getBoundingClientRect().width / parseFloat(s.getAttribute("width")) / exPerEm,
               parseFloat(getComputedStyle(s).fontSize)])
  .filter(([s, px, text]) => px < 10 || px < 0.9 * text)
  .map(([s, px, text]) => `${describe(s.parentElement)} drawn at ${px.toFixed(1)} px in ${text} px text`);
const strayPunctuation = [...article.querySelectorAll("span.math")].flatMap((m) => {
  const after = m.nextSibling;
  if (!after || after.nodeType !== Node.TEXT_NODE || !/^[.,;:)]/.test(after.data)) return [];
  const mark = document.createRange();
  mark.setStart(after, 0);
  mark.setEnd(after, 1);
  const r = mark.getBoundingClientRect(), f = m.getBoundingClientRect();
  return r.width > 0 && f.width > 0 && r.left < f.left ? [`"${after.data.slice(0, 2)}" after ${describe(m)}`] : [];
});
return {cueless, cutCaptions, smallMath, strayPunctuation};
"""


def assert_layout(state: dict, page: str, width: int) -> None:
    for key, what in [("cueless", "content wider than its box that scrolls with no cue (layout.js's fade)"),
                      ("cutCaptions", "captions cut off"), ("smallMath", "formulas drawn too small to read"),
                      ("strayPunctuation", "punctuation after a formula alone at a line's start")]:
        assert not state[key], f"{page} at {width} px: {what}:\n" + "\n".join(state[key][:10])


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_in_chromium(measured: dict, site: Path, page: str) -> None:
    found = measurement(measured, page, DESKTOP)
    mathjax, state = found["mathjax"], found["inspect"]
    assert not state["brokenImages"], f"{page}: images that did not load: {state['brokenImages']}"
    if page in CHAPTER_PAGES:
        assert state["images"] > 0, f"{page}: a chapter page without a figure"
    if soup(site / f"{page}.html").select(".math"):
        assert mathjax == "ok", f"{page}: MathJax did not start ({mathjax})"
        assert state["rendered"] > 0 and state["unrendered"] == 0, f"{page}: math left unrendered: {state}"
    assert not state["errors"], f"{page}: MathJax errors: {state['errors']}"
    assert not state["rawTex"], f"{page}: raw TeX delimiters {state['rawTex']} in the rendered text"
    overflowing = found["overflow"]
    assert not overflowing, f"{page}: content wider than its box (cut off at 1280 px):\n" + "\n".join(overflowing[:10])
    assert_layout(found["layout"], page, DESKTOP)


# At phone width a wide table or display equation may scroll inside its own box; what fails is content that no box
# scrolls (cut off at the column's edge) and a page that scrolls sideways as a whole.
CLIPPED = """
const article = document.querySelector("main") || document.body;
const scrolls = (e) => {
  for (let a = e; a && a !== article; a = a.parentElement) {
    const o = getComputedStyle(a).overflowX;
    if ((o === "auto" || o === "scroll") && a.scrollWidth > a.clientWidth) return true;
  }
  return false;
};
const boxes = article.querySelectorAll("p, li, pre, table, div.cell_output, div.cell_output *, div.proof, "
  + "div.admonition, mjx-container[display='true'], img, figure");
const root = document.documentElement;
// inline math runs past the right edge of the first ancestor that clips it (a theorem box hides its overflow)
const clippedMath = (m) => {
  const right = m.getBoundingClientRect().right;
  for (let a = m.parentElement; a && a !== root; a = a.parentElement) {
    const o = getComputedStyle(a).overflowX;
    if (o === "auto" || o === "scroll") return false;
    if (o !== "visible") return right > a.getBoundingClientRect().right + 2;
  }
  return right > root.clientWidth + 2;
};
// what a phone reader cannot see without finding a scroll bar: a figure wider than the screen, a cell of the
// tables that hold the verdicts (the scorecard, the errata, the summary), of a table shown as cards (every result
// table of four columns or more, whose columns the prose compares), and a cell of a table of three columns or
// fewer (which wraps to the screen: a long key pushed a calculator table's values off it) off the screen's edge
const narrow = [...article.querySelectorAll("table")]
  .filter((t) => t.rows.length > 0 && t.rows[0].cells.length <= 3)
  .flatMap((t) => [...t.querySelectorAll("td")]);
const offScreen = [...article.querySelectorAll("figure img, table.fixed-columns td, table.verdict-summary td, "
                                               + "table.cards-on-phone td")]
  .concat(narrow)
  .filter((e) => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > root.clientWidth + 2);
return {
  pageWidth: root.scrollWidth, viewport: root.clientWidth,
  hidden: offScreen.map((e) => `${e.tagName.toLowerCase()} ending at ${Math.round(e.getBoundingClientRect().right)} `
                               + `px: "${(e.textContent || e.getAttribute("alt") || "").trim().slice(0, 60)}"`),
  clipped: [...boxes]
    .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 2 && !scrolls(e)
                   && !getComputedStyle(e).display.startsWith("inline"))
    .concat([...article.querySelectorAll("mjx-container:not([display='true'])")].filter(clippedMath))
    .map((e) => `${e.tagName.toLowerCase()}: content ${e.scrollWidth} px in a ${e.clientWidth} px box: `
                + `"${(e.textContent || "").trim().slice(0, 60)}"`),
};
"""


#: the widths every page is measured at: a desktop window and a phone
DESKTOP, PHONE = 1280, 400
#: what is measured at each width once the page and its formulas are drawn
SCRIPTS = {DESKTOP: {"inspect": INSPECT, "overflow": OVERFLOW, "layout": LAYOUT},
           PHONE: {"clipped": CLIPPED, "layout": LAYOUT}}


def measure(browser, url: str, width: int) -> dict:
    """The page at ``url`` in a window ``width`` px wide: whether MathJax started, and each of :data:`SCRIPTS`'
    measurements at that width."""
    browser.set_window_size(width, 900)
    browser.get(url)
    return {"mathjax": browser.execute_async_script(WAIT_FOR_MATHJAX)} | {
        name: browser.execute_script(script) for name, script in SCRIPTS[width].items()}


@pytest.fixture(scope="module")
def measured(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], dict]:
    """(page, width) -> :func:`measure` for every page at both widths (or ``{"error": ...}`` for a page that could
    not be measured, which fails that page's test alone), by two browsers side by side: one browser page after page
    kept the suite waiting at its end."""
    todo = [(page, width) for page in PAGES for width in (DESKTOP, PHONE)]
    browsers = []
    try:
        browsers += [start_browser(tmp_path_factory.mktemp("chromium")) for _ in range(2)]

        def share(k: int) -> list[tuple[tuple[str, int], dict]]:  # browser k measures every second page
            found = []
            for page, width in todo[k::len(browsers)]:
                try:
                    found.append(((page, width), measure(browsers[k], f"{server}/{page}.html", width)))
                except Exception as err:  # noqa: BLE001 - reported by the page's test
                    found.append(((page, width), {"error": f"{type(err).__name__}: {err}"}))
            return found

        with ThreadPoolExecutor(max_workers=len(browsers)) as pool:
            return dict(item for part in pool.map(share, range(len(browsers))) for item in part)
    finally:
        for browser in browsers:
            browser.quit()


def measurement(measured: dict, page: str, width: int) -> dict:
    found = measured[page, width]
    assert "error" not in found, f"{page} at {width} px could not be measured: {found.get('error')}"
    return found


@pytest.mark.parametrize("page", PAGES)
def test_page_fits_a_phone(measured: dict, page: str) -> None:
    found = measurement(measured, page, PHONE)
    assert_layout(found["layout"], page, PHONE)
    state = found["clipped"]
    assert state["pageWidth"] <= state["viewport"] + 2, f"{page}: the page scrolls sideways at 400 px: {state}"
    assert not state["clipped"], f"{page}: content cut off at 400 px:\n" + "\n".join(state["clipped"][:10])
    assert not state["hidden"], f"{page}: figures or verdicts off the screen at 400 px:\n" + "\n".join(
        state["hidden"][:10])
