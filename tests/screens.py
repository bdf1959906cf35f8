"""What a page looks like, measured from its boxes in the browser: text that leaves its box, cells that overlap,
and the contrast of every visible text against its effective background (WCAG 2 relative luminance).

Used by the browser tests with a Playwright page; each function returns the problems found as lines (empty: none),
so a test can gather them over states and screen sizes and name them all in one failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from assistant.settings import ROOT

SCREENS = {"1920x1080": (1920, 1080), "1024x768": (1024, 768), "768x1024": (768, 1024)}
"""A 16:9 hall screen, a 4:3 hall screen and a floor tablet upright."""
AA = 4.5
"""WCAG 2 AA contrast for text (1.4.3), asked here of all text, large or not."""
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
DOCUMENTED = frozenset(
    {
        *(f"flashboard-{state}-1024x768.png" for state in ("calling", "checking", "not-valid", "valid", "completed")),
        "flashboard-calling-1920x1080.png",
        "flashboard-checking-768x1024.png",
        "master-board-completed-1024x768.png",
        "master-board-checking-768x1024.png",
        "console.png",
        "flashboard.png",
    }
)
"""The screenshots the docs show (docs/screenshots), out of every state at every size the tests take."""
SLACK = 0.5
"""Pixels of rounding allowed where a box's edge is compared."""

_DESCRIBE = """
function describe(el) {
  let name = el.tagName.toLowerCase();
  if (el.id) name += "#" + el.id;
  else if (el.className && typeof el.className === "string") name += "." + el.className.trim().split(/\\s+/).join(".");
  const field = ["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName);
  const text = String((field ? el.value : el.textContent) || "").trim();
  return name + (text ? ' "' + text.slice(0, 40) + '"' : "");
}
function shown(el) {
  // on screen for a reader: laid out, not hidden, not clipped away as the screen-reader-only text is
  for (let node = el; node; node = node.parentElement) {
    const style = getComputedStyle(node);
    if (style.display === "none" || style.visibility === "hidden" || parseFloat(style.opacity) === 0) return false;
    if (style.clip === "rect(0px, 0px, 0px, 0px)") return false;
  }
  const box = el.getBoundingClientRect();
  const page = { right: box.right + scrollX, bottom: box.bottom + scrollY };
  return box.width > 1 && box.height > 1 && page.right > 0 && page.bottom > 0;  // not moved off the page
}
function ownText(el) {
  return Array.from(el.childNodes).filter((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
}
"""

_FITS = (
    "(() => {"
    + _DESCRIBE
    + """
return ([selector, slack]) => {
  const problems = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!shown(el)) continue;
    const texts = ownText(el);
    if (!texts.length) continue;
    const range = document.createRange();
    range.setStartBefore(texts[0]);
    range.setEndAfter(texts[texts.length - 1]);
    const text = range.getBoundingClientRect();
    const box = el.getBoundingClientRect();
    const left = box.left + el.clientLeft, top = box.top + el.clientTop;
    const inner = { left, top, right: left + el.clientWidth, bottom: top + el.clientHeight };
    if (el.clientWidth === 0 && el.clientHeight === 0) Object.assign(inner, { right: box.right, bottom: box.bottom });
    // a text's box is its font's whole height (about 1.16 em in DejaVu Sans), taller than its glyphs: set solid
    // (line-height 1) it stands out of its line by a few pixels that hold no ink
    const solid = slack + 0.2 * parseFloat(getComputedStyle(el).fontSize);
    const out = [];
    if (text.left < inner.left - slack) out.push("left by " + (inner.left - text.left).toFixed(1));
    if (text.right > inner.right + slack) out.push("right by " + (text.right - inner.right).toFixed(1));
    if (text.top < inner.top - solid) out.push("top by " + (inner.top - text.top).toFixed(1));
    if (text.bottom > inner.bottom + solid) out.push("bottom by " + (text.bottom - inner.bottom).toFixed(1));
    if (text.right > innerWidth + slack || text.left < -slack) out.push("off the screen's width");
    if (out.length) problems.push(describe(el) + ": its text leaves its box (" + out.join(", ") + ")");
  }
  return problems;
};
})()
"""
)

_OVERLAPS = (
    "(() => {"
    + _DESCRIBE
    + r"""
function drawn(el) {
  // the box as drawn: an outer shadow (a ring round the current ball) reaches past the border by its offset,
  // blur and spread
  const box = el.getBoundingClientRect();
  let reach = 0;
  const shadow = getComputedStyle(el).boxShadow;
  if (shadow !== "none") {
    for (const one of shadow.split(/,(?![^(]*\))/)) {
      if (one.includes("inset")) continue;
      const [x = 0, y = 0, blur = 0, spread = 0] = (one.replace(/rgba?\([^)]*\)/, "").match(/-?[\d.]+px/g) || [])
        .map(parseFloat);
      reach = Math.max(reach, Math.max(Math.abs(x), Math.abs(y)) + blur + spread);
    }
  }
  return { left: box.left - reach, top: box.top - reach, right: box.right + reach, bottom: box.bottom + reach };
}
return ([selector, slack]) => {
  const boxes = Array.from(document.querySelectorAll(selector))
    .filter(shown)
    .map((el) => [el, drawn(el)]);
  const problems = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, p] = boxes[i], [b, q] = boxes[j];
      if (a.contains(b) || b.contains(a)) continue;
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > slack && h > slack) {
        problems.push(describe(a) + " overlaps " + describe(b) + " (" + w.toFixed(1) + " x " + h.toFixed(1) + " px)");
      }
    }
  }
  return problems;
};
})()
"""
)

_COLOURS = (
    "(() => {"
    + _DESCRIBE
    + """
return (selector) => {
  // [element, text colour, background] for every visible text and control, the background composed from the
  // element's own and its ancestors' background colours (each weighed by the opacity it is drawn with) over the
  // white canvas; a background image cannot be measured and is reported as such
  const parse = (css) => {
    const m = css.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const v = m[1].split(/[ ,\\/]+/).filter(Boolean).map(parseFloat);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
  };
  const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3]));
  const rows = [];
  for (const el of document.querySelectorAll(selector)) {
    const control = ["INPUT", "SELECT", "TEXTAREA", "BUTTON"].includes(el.tagName) && el.type !== "hidden";
    if (!control && !ownText(el).length) continue;
    if (!shown(el)) continue;
    if (el.closest(":disabled")) continue;  // WCAG 1.4.3: an inactive control is exempt
    const chain = [];
    for (let node = el; node; node = node.parentElement) chain.unshift(node);
    let background = [255, 255, 255];
    let opacity = 1;
    let image = null;
    for (const node of chain) {
      const style = getComputedStyle(node);
      opacity *= parseFloat(style.opacity);
      const colour = parse(style.backgroundColor);
      if (colour && colour[3] > 0) {
        background = over([colour[0], colour[1], colour[2], colour[3] * opacity], background);
      }
      if (style.backgroundImage !== "none") image = describe(node);
      else if (colour && colour[3] * opacity >= 1) image = null;  // an opaque colour covers an image below it
    }
    const fg = parse(getComputedStyle(el).color);
    rows.push([describe(el), over([fg[0], fg[1], fg[2], fg[3] * opacity], background), background, image]);
  }
  return rows;
};
})()
"""
)


def luminance(rgb: list[float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0-255 channels)."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb[:3])]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: list[float], b: list[float]) -> float:
    """WCAG 2 contrast ratio of two colours, 1 to 21."""
    high, low = sorted([luminance(a), luminance(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


def contrasts(page: Any, selector: str = "body *") -> list[tuple[str, float, str]]:
    """Each visible text, link and control matching `selector`: (element, its contrast against its effective
    background, 'colour on background'). A text over a background image cannot be measured: its contrast is 0."""
    measured: list[tuple[str, float, str]] = []
    for name, fg, bg, image in page.evaluate(_COLOURS, selector):
        if image is not None:
            measured.append((name, 0.0, f"over a background image of {image}, not measurable"))
        else:
            measured.append((name, contrast(fg, bg), f"{_hex(fg)} on {_hex(bg)}"))
    return measured


def low_contrast(page: Any, minimum: float = AA, selector: str = "body *") -> list[str]:
    """Every visible text, link and control of the page whose colour against its effective background is below
    `minimum`, as 'element: contrast ratio (colour on background)'."""
    return [
        f"{name}: contrast {ratio:.2f} ({how})" for name, ratio, how in contrasts(page, selector) if ratio < minimum
    ]


def overflowing(page: Any, selector: str) -> list[str]:
    """Elements matching `selector` whose own text leaves their box (inside the border) or the screen's width."""
    return list(page.evaluate(_FITS, [selector, SLACK]))


def overlapping(page: Any, selector: str) -> list[str]:
    """Pairs of visible elements matching `selector` (neither inside the other) whose boxes overlap as drawn (with
    any outer shadow)."""
    return list(page.evaluate(_OVERLAPS, [selector, SLACK]))


def scrolls_sideways(page: Any) -> list[str]:
    """The page is wider than the screen (a reader would have to scroll sideways)."""
    wide = page.evaluate("document.documentElement.scrollWidth - innerWidth")
    return [f"the page is {wide} px wider than the screen"] if wide > 0 else []


def _hex(rgb: list[float]) -> str:
    return "#" + "".join(f"{round(v):02x}" for v in rgb[:3])


def screenshot(page: Any, folder: Path, name: str, *, full_page: bool = False) -> Path:
    """A screenshot of the screen as it is now (`full_page`: the whole page), into `folder`; copied into
    docs/screenshots with BINGO_SCREENSHOTS=1 when the docs show it (DOCUMENTED), with BINGO_SCREENSHOTS=all
    whatever it is. The docs' pictures are made by the tests on demand, so a test run leaves the tree as it was."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    page.screenshot(path=str(path), full_page=full_page)
    wanted = os.environ.get("BINGO_SCREENSHOTS", "")
    if wanted == "all" or (wanted and name in DOCUMENTED):
        DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_SCREENSHOTS / name)
    return path
