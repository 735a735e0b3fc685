"""The configuration comes from plan.axes.AXES: the report's columns, labels, names and figure slots, and the
result schema's axis columns."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from orchestrator.analysis.variants import cell_name
from orchestrator.plan.axes import AXES, CONFIG_AXES, Kind
from orchestrator.report import figures, tables
from orchestrator.report.formats import config_label, config_name, config_tags
from orchestrator.report.model import ReportModel
from orchestrator.results.rows import (
    CELL,
    CELL_DEFAULTS,
    CONFIG,
    EPOCH_SCHEMA,
    TRIAL_SCHEMA,
    promised_columns,
)
from orchestrator.results.schema import READABLE_VERSIONS, SCHEMA_VERSION


def test_the_cell_key_and_the_configuration_are_the_axes():
    assert CELL == tuple(a.trial_field for a in AXES)
    assert CONFIG == tuple(a.trial_field for a in CONFIG_AXES) == tuple(figures.CONFIG_AXES)
    assert CELL_DEFAULTS["compile"] == "off"  # results from before the compile axis read as eager


def test_every_axis_has_a_column_in_both_results_tables():
    columns = [a.column for a in CONFIG_AXES]
    assert columns == ["batch", "pipeline", "precision", "step"]
    assert all(c in tables.HEADLINE and c in tables.DETAILS for c in columns)


def test_labels_and_names_say_each_axis_and_leave_the_unmarked_value_out():
    eager = dict(model="resnet18", batch_size=128, pipeline="loader", precision="fp32", compile="off")
    compiled = dict(eager, compile="on")
    assert config_label(eager) == "batch 128, loader, fp32"
    assert config_label(compiled) == "batch 128, loader, fp32, compiled"
    assert config_tags(compiled, short=True) == ["bs128", "loader", "fp32", "compiled"]
    assert config_name(eager) == "resnet18/bs128/loader/fp32"
    assert config_label(pd.Series({k: v for k, v in eager.items() if k != "compile"})) == config_label(eager)
    # a label of the axes a line holds (throughput: the batch size is the x axis) names no others
    assert config_label(dict(pipeline="resident", precision="amp", compile="on")) == "resident, amp, compiled"


def test_an_all_eager_table_leaves_the_step_column_out():
    row = dict(model="m", params=1, batch_size=128, pipeline="loader", precision="fp32", compile="off")
    eager = ReportModel.of_table(pd.DataFrame([row]))
    mixed = ReportModel.of_table(pd.DataFrame([row, dict(row, compile="on")]))
    assert "step" not in tables.columns(eager, tables.HEADLINE)
    assert "step" in tables.columns(mixed, tables.HEADLINE)
    assert tables.rows(mixed, ["model", "step"]) == [["m", "eager"], ["m", "compiled"]]


def test_every_axis_is_a_column_of_both_result_schemas_promised_from_its_version():
    """rows.py takes each axis's column from AXES: its type (an integer for Kind.ints, else text) and the
    schema version from which files must hold it (compile: 6; older files read as its Axis.before)."""
    for schema in (EPOCH_SCHEMA, TRIAL_SCHEMA):
        for a in AXES:
            assert schema.field(a.trial_field).type == (pa.int32() if a.kind is Kind.ints else pa.string())
    for a in AXES:
        assert a.schema in READABLE_VERSIONS and int(a.schema) <= int(SCHEMA_VERSION)
        older = str(int(a.schema) - 1)
        assert a.trial_field in promised_columns("epochs", a.schema)
        assert older == "0" or a.trial_field not in promised_columns("trials", older)
    assert "compile" not in promised_columns("epochs", "5") and "compile" in promised_columns("trials", "7")


def test_a_variant_cells_name_says_its_axes():
    row = dict(model="m", hw_class="gpu:H200", device="gpu", batch_size=128, pipeline="loader",
               precision="fp32", compile="off", data_workers=2, cpus_allotted=3)  # fmt: skip
    assert cell_name(row) == "m/gpu:H200/bs128/loader/fp32/eager (2 workers, 3 CPUs)"
    compiled = dict(row, compile="on", pipeline="resident")
    assert cell_name(compiled) == "m/gpu:H200/bs128/resident/fp32/compiled (3 CPUs)"
