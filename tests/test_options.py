"""orchestrator/plan/options.py: each sweep option declared once, and --help, SweepSpec, presets and the
README agreeing with it (and with each other) on every default."""

from __future__ import annotations

import dataclasses
import re
from enum import Enum
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.commands.sweep import spec_fields
from orchestrator.plan import options
from orchestrator.plan.options import OPTIONS, markdown_table, option
from orchestrator.plan.parse import parse_axis
from orchestrator.plan.presets import PRESETS
from orchestrator.plan.spec import RESUMABLE_CHANGES, SweepSpec
from trainables.config import START_METHOD

README = Path(__file__).resolve().parent.parent / "README.md"


def sweep_help() -> str:
    """`benchctl sweep --help` on a terminal wide enough that no option's help wraps."""
    result = CliRunner().invoke(app, ["sweep", "--help"], terminal_width=2000, max_content_width=2000)
    assert result.exit_code == 0, result.output
    return result.output


def help_defaults(text: str) -> dict[str, list[str]]:
    """Each option of a --help text -> every default its entry states (`[default: X]` or a `default: X`
    in its prose), so an entry that states none, or two, shows."""
    entries = re.split(r"\n(?=  --)", text.split("\nOptions:\n", 1)[1])
    out = {}
    for entry in entries:
        flag = entry.split()[0]
        words = " ".join(entry.split())
        found = re.findall(r"\[default: ([^\]]*)\]|\(default: ([^)]*)\)|default:? ([^.;]*)", words)
        out[flag] = ["".join(groups) for groups in found]
        assert len(out[flag]) == words.lower().count("default"), f"{flag} says 'default' besides: {words}"
    return out


def readme_defaults(text: str) -> dict[str, str]:
    """Each option of the README's options table -> its default cell, code marks taken off."""
    table = text.split(options.BEGIN, 1)[1].split(options.END, 1)[0]
    out = {}
    for line in table.strip().splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        out[cells[0].split("`")[1]] = cells[1].replace("`", "")
    return out


def disagreements(help_text: str, readme_text: str) -> list[str]:
    """Where --help or the README says another default than the table, or lists another option."""
    in_help, in_readme = help_defaults(help_text), readme_defaults(readme_text)
    out = []
    for o in OPTIONS:
        if in_help.get(o.flag) != [o.shown_default]:
            out.append(f"--help {o.flag}: {in_help.get(o.flag)} != [{o.shown_default!r}]")
        if in_readme.get(o.flag) != o.shown_default:
            out.append(f"README {o.flag}: {in_readme.get(o.flag)!r} != {o.shown_default!r}")
    flags = {o.flag for o in OPTIONS}
    out += [f"--help {flag}: not in the table" for flag in in_help.keys() - flags - {"--help"}]
    out += [f"README {flag}: not in the table" for flag in in_readme.keys() - flags]
    return out


def test_help_and_readme_state_every_default_once_as_the_table_does():
    assert disagreements(sweep_help(), README.read_text(encoding="utf-8")) == []


def test_a_default_that_drifts_is_caught():
    help_text, readme = sweep_help(), README.read_text(encoding="utf-8")
    # the drift issue 33 found: a default stated twice, a default left out, a README row missing
    twice = help_text.replace("whose node died.", "whose node died (default: 0).")
    assert any("--max-failures" in line for line in disagreements(twice, readme))
    unstated = re.sub(r"\(loader pipeline\)\.\s+\[default: 2\]", "(loader pipeline).", help_text)
    assert any("--workers" in line for line in disagreements(unstated, readme))
    no_row = "\n".join(line for line in readme.splitlines() if not line.startswith("| `--max-eval-steps`"))
    assert any("README --max-eval-steps" in line for line in disagreements(help_text, no_row))
    other = readme.replace("| `--max-failures` | `1` |", "| `--max-failures` | `0` |")
    assert any("README --max-failures" in line for line in disagreements(help_text, other))


def test_the_readme_table_is_the_generated_one():
    readme = README.read_text(encoding="utf-8")
    assert options.with_table(readme) == readme, "run: python -m orchestrator.plan.options README.md"
    assert markdown_table() in readme
    for flag in ("--seed", "--train-size", "--test-size", "--max-eval-steps", "--out", "--port"):
        assert f"| `{flag}` |" in readme


def _shown(value) -> str:
    """A SweepSpec field's value as the table states a default."""
    if isinstance(value, tuple):
        return ",".join(_shown(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return value.value if isinstance(value, Enum) else str(value)


def test_sweepspec_defaults_are_the_options_defaults():
    declared = {f.name: f for f in dataclasses.fields(SweepSpec)}
    assert declared.keys() == {o.field for o in OPTIONS if o.field}  # every field is an option's
    spec = SweepSpec(name="x")
    for o in OPTIONS:
        if o.field is None or o.param == "name":  # name: a fresh timestamp each time (default_factory)
            continue
        assert declared[o.field].default == o.field_default, o.flag
        if o.shown is None:  # its value is its default's words: the built spec holds that value
            assert _shown(getattr(spec, o.field)) == o.shown_default, o.flag
    assert spec.max_failures == 1 and option("max_failures").shown_default == "1"
    assert spec.start_method is START_METHOD and option("start_method").shown_default == START_METHOD.value
    assert re.fullmatch(r"\d{8}-\d{6}", spec_fields({**_defaults(), "name": None})["name"])


def _defaults() -> dict:
    return {o.param: o.default for o in OPTIONS}


def test_the_cli_builds_with_no_option_given_the_default_spec():
    assert SweepSpec(**spec_fields({**_defaults(), "name": "x"})) == SweepSpec(name="x")


def test_the_commands_parameters_are_the_tables():
    command = typer.main.get_command(app).commands["sweep"]
    params = {p.name: p for p in command.params}
    assert list(params) == [o.param for o in OPTIONS]
    for o in OPTIONS:
        assert params[o.param].default == o.default, o.flag
        assert params[o.param].opts[0] == o.flag


def test_axis_defaults_parse_as_the_option_text_does():
    for o in OPTIONS:
        if o.axis is not None and o.default is not None:
            assert parse_axis(o.axis, o.default) == o.field_default == o.axis.default_values


def test_presets_set_only_option_fields_in_their_types():
    fields = {o.field: o for o in OPTIONS if o.field}
    for preset, settings in PRESETS.items():
        assert set(settings.settings) <= fields.keys()
        SweepSpec(name="x", preset=preset, **settings.settings)  # valid as the spec takes it
        for name, value in settings.settings.items():
            default = fields[name].field_default
            assert value is None or default is None or type(value) is type(default), name


def test_a_preset_that_sets_no_options_field_is_refused_at_import(monkeypatch):
    paper = next(iter(PRESETS.values()))
    bogus = dataclasses.replace(paper, settings={**paper.settings, "batch_size": 64})
    monkeypatch.setattr(options, "PRESETS", {next(iter(PRESETS)): bogus})
    with pytest.raises(TypeError, match="batch_size is no sweep option's field"):
        options._check_presets()


def test_a_resume_may_change_the_resumable_options_only():
    assert set(RESUMABLE_CHANGES) == {
        "name", "out", "cluster", "cluster_port", "max_failures", "resume", "isolate_network", "preset",
        "checkpoint", "checkpoint_every", "checkpoint_every_s",
        "uniform_cells",  # where CPU cells run: each row records its cores and class
    }  # fmt: skip
    row = next(line for line in markdown_table().splitlines() if line.startswith("| `--resume`"))
    for o in OPTIONS:
        if o.resumable and o.param not in ("name", "out", "resume"):
            assert f"`{o.flag}`" in row.split("may change")[1]


def test_a_default_of_none_must_say_what_none_means():
    with pytest.raises(ValueError, match="--x: a default of None needs `shown`"):
        options.Option("x", int, None, "X.", "x")
