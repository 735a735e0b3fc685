"""report.html: one self-contained file (figures embedded, nothing fetched), from the same content as
report.md; `benchctl report --format`; and a headless Chromium screenshot that is not blank.

.venv/bin/python -m pytest -q tests/test_html.py
"""

from __future__ import annotations

import base64
import re

import matplotlib.pyplot as plt
import pytest
from procutil import looks_rendered, screenshot
from test_report import WARMUP_S, write_run
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import BenchctlError
from orchestrator.report import build_report
from orchestrator.report.html import to_html, write_html

# a src= / href= (any quoting) whose value is neither a data: URI nor an in-page #anchor
EXTERNAL = re.compile(r"""(?<![\w-])(?:src|href|srcset)\s*=\s*(?!["']?(?:data:|#))""", re.IGNORECASE)


def png(path, color: str) -> bytes:
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.bar([0, 1], [1, 2], color=color)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path.read_bytes()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


MD = """# Title with <angle> & ampersand

| model | speedup |
|---|---|
| resnet18 | 6.00x<br>second line |

![speedup](figures/a.png)

*caption*

![epoch time](figures/b.png)

A [web link](https://example.com/x) and <script src="http://evil.example/x.js"></script>
<img src='http://evil.example/p.png'> <a href=http://evil.example>x</a> [anchor](#title)
"""


def test_html_is_self_contained(tmp_path):
    figs = tmp_path / "figs"
    figs.mkdir()
    a, b = png(figs / "a.png", "red"), png(figs / "b.png", "blue")
    path = write_html(MD, figs, tmp_path / "out" / "report.html")
    page = path.read_text(encoding="utf-8")
    assert path == tmp_path / "out" / "report.html" and page.startswith("<!DOCTYPE html>")
    assert EXTERNAL.findall(page) == []
    assert "<link" not in page and "<script" not in page and "@import" not in page and "url(" not in page
    assert f'src="data:image/png;base64,{b64(a)}"' in page and f'src="data:image/png;base64,{b64(b)}"' in page
    assert page.count("<img") == 2  # the raw <img> became text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert '<div class="table-scroll"><table>' in page and "overflow-x: auto" in page
    assert "<td>6.00x<br>second line</td>" in page  # <br> kept for table line breaks
    assert "&lt;script" in page  # raw HTML shown as text, not run
    assert 'href="#title"' in page and "data-removed-href" in page
    assert "<title>Title with &lt;angle&gt; &amp; ampersand</title>" in page
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]  # no temp file left


def test_missing_figure_is_an_error_naming_it(tmp_path):
    with pytest.raises(BenchctlError, match="figures/a.png"):
        to_html(MD, tmp_path)
    with pytest.raises(BenchctlError):
        write_html(MD, tmp_path, tmp_path / "report.html")
    assert not (tmp_path / "report.html").exists()


@pytest.fixture
def results(tmp_path):
    d = tmp_path / "results" / "s1"
    for model, cpu, gpu in [("simple_cnn", 20.0, 9.0), ("resnet18", 33.0, 5.5)]:
        for repeat in (0, 1):
            write_run(d, model, "cpu", [WARMUP_S, cpu, cpu * 1.05], repeat=repeat)
            write_run(d, model, "gpu", [WARMUP_S, gpu, gpu * 1.02], repeat=repeat)
    return d


def test_report_html_embeds_every_figure(results, tmp_path):
    out = tmp_path / "out"
    rep = build_report([results], out)
    assert rep.paths[:2] == [out / "report.md", out / "report.html"]
    page = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert EXTERNAL.findall(page) == []
    figures = sorted((out / "figures").glob("*.png"))
    assert len(figures) == 4 and page.count('src="data:image/png;base64,') == len(figures)
    for fig in figures:
        assert b64(fig.read_bytes()) in page, fig.name
    assert page.count("<table>") == md.count("\n|---") >= 2  # every Markdown table is an HTML table
    assert "<h2>What this shows</h2>" in page and "<th>speedup</th>" in page
    assert "<td>resnet18</td>" in page


def test_formats_html_only_and_md_only(results, tmp_path):
    html_only = build_report([results], tmp_path / "h", formats=["html"])
    assert html_only.paths[0] == tmp_path / "h" / "report.html"
    assert not (tmp_path / "h" / "report.md").exists() and (tmp_path / "h" / "figures").is_dir()
    build_report([results], tmp_path / "m", formats=["md"])
    assert (tmp_path / "m" / "report.md").exists() and not (tmp_path / "m" / "report.html").exists()


runner = CliRunner()


def test_cli_format_option(results, tmp_path):
    result = runner.invoke(app, ["report", str(results), "--out", str(tmp_path / "both")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "both" / "report.md").exists() and (tmp_path / "both" / "report.html").exists()
    assert "report.md and " in result.output and "report.html" in result.output
    result = runner.invoke(app, ["report", str(results), "--out", str(tmp_path / "h"), "--format", "html"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "h").iterdir()) == ["figures", "report.html", "summary.json"]


def test_cli_unknown_format_is_one_line_exit_2(results, tmp_path):
    out = tmp_path / "x"
    result = runner.invoke(app, ["report", str(results), "--out", str(out), "--format", "md,pdf"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines == ["benchctl: error: --format: unknown value 'pdf'; choose from md, html, csv"]
    assert not out.exists()


def test_chromium_renders_a_non_blank_page(results, tmp_path, chromium):
    build_report([results], tmp_path / "out", formats=["html"])
    image = screenshot(tmp_path / "out" / "report.html", tmp_path)
    assert image.shape[:2] == (1200, 800)
    assert looks_rendered(image)
