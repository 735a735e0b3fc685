"""report.html: report.md as ONE self-contained HTML file (figures inline, CSS inline, nothing fetched).

    from orchestrator.report.html import write_html
    write_html(md_text, Path("reports/s1/figures"), Path("reports/s1/report.html"))

The Markdown is converted with Python-Markdown (`tables` extension); every <img src="figures/NAME"> is
replaced by a base64 data: URI of figures_dir/NAME. Raw HTML in the Markdown is shown as text (an error
message such as "expected <class 'int'>" stays readable and can inject nothing), except <br>, which the
tables use for line breaks. Any src= / href= that is still neither a data: URI nor an in-page #anchor
(a Markdown link to a web page) is renamed to data-removed-src= / data-removed-href=, so the file never
makes the browser fetch anything and opens offline. Tables sit in a horizontally scrolling box, so they
stay readable on a phone.
"""

from __future__ import annotations

import base64
import html as html_lib
import mimetypes
import os
import re
from pathlib import Path

import markdown

from orchestrator.errors import RUNTIME, BenchctlError

CSS = """
:root { color-scheme: light; }
body { margin: 0; padding: 0 12px 48px; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto,
       "DejaVu Sans", sans-serif; color: #1d1d1f; background: #fff; }
main { max-width: 1100px; margin: 0 auto; }
h1 { font-size: 1.6em; margin: 0.8em 0 0.4em; }
h2 { font-size: 1.25em; margin: 1.6em 0 0.5em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
code { font: 0.9em ui-monospace, "DejaVu Sans Mono", monospace; background: #f3f3f3; padding: 0 0.2em; }
.table-scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: 0.8em 0; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85em; white-space: nowrap; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f2f5; position: sticky; top: 0; }
tr:nth-child(even) td { background: #fafafa; }
img { max-width: 100%; height: auto; display: block; margin: 0.8em 0; }
figure { margin: 0; }
p em { color: #555; }
@media (max-width: 600px) { body { font-size: 14px; padding: 0 8px 32px; } h1 { font-size: 1.3em; } }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<main>
{body}
</main>
</body>
</html>
"""

_IMG_SRC = re.compile(r'(<img\b[^>]*?\bsrc=")([^"]+)(")', re.IGNORECASE)
# an attribute that makes a browser fetch, whose value (quoted or not) is neither data: nor an #anchor
_EXTERNAL = re.compile(r"""(?<![\w-])(src|href|srcset|poster)(\s*=\s*)(?!["']?(?:data:|#))""", re.IGNORECASE)


def _data_uri(path: Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _title(md_text: str) -> str:
    first = next((line[2:].strip() for line in md_text.splitlines() if line.startswith("# ")), "")
    return html_lib.escape(first or "benchctl report")


def convert(md_text: str) -> str:
    """`md_text` as HTML, its figures not yet embedded: the costly half of to_html, which needs no figure."""
    converter = markdown.Markdown(extensions=["tables"], output_format="html")
    converter.preprocessors.deregister("html_block")  # raw HTML blocks become text
    converter.inlinePatterns.deregister("html")  # and so do inline tags ...
    return converter.convert(md_text).replace("&lt;br&gt;", "<br>")  # ... except <br>


def to_html(md_text: str, figures_dir: Path, body: str | None = None) -> str:
    """The self-contained page for `md_text`; images are read from figures_dir by file name. A figure the
    Markdown links to but figures_dir lacks is a BenchctlError naming it. `body`: convert(md_text), where
    the caller has it already."""
    body = convert(md_text) if body is None else body

    def embed(match: re.Match) -> str:
        src = html_lib.unescape(match.group(2))
        if src.startswith("data:"):
            return match.group(0)
        image = Path(figures_dir) / Path(src).name
        if not image.is_file():
            raise BenchctlError(f"report.html: figure {src} not found in {figures_dir}", RUNTIME)
        return match.group(1) + _data_uri(image) + match.group(3)

    body = _IMG_SRC.sub(embed, body)
    body = _EXTERNAL.sub(lambda m: f"data-removed-{m.group(1)}{m.group(2)}", body)
    body = body.replace("<table>", '<div class="table-scroll"><table>').replace("</table>", "</table></div>")
    return PAGE.format(title=_title(md_text), css=CSS.strip(), body=body)


def write_html(md_text: str, figures_dir: Path, path: Path, body: str | None = None) -> Path:
    """Write to_html(md_text, figures_dir, body) to `path` through a temp file moved into place
    (os.replace)."""
    page = to_html(md_text, figures_dir, body)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # same folder: os.replace stays atomic
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
