import time

import pytest
import torch

from trainables.timing import StepTimeline, extrapolate, timed

CPU = torch.device("cpu")


def test_split_attributes_waits_to_data_and_work_to_compute():
    # sleeps set lower bounds on each interval; nothing here asserts a speed
    timeline = StepTimeline(CPU)
    timeline.start()
    for _ in range(3):
        time.sleep(0.02)  # "waiting for input"
        timeline.input_ready()
        time.sleep(0.01)  # "compute"
        timeline.step_done()
    t = timeline.stop()
    assert t.steps == 3
    assert t.data_s >= 0.06 and t.compute_s >= 0.03
    assert t.data_s + t.compute_s <= t.epoch_s


def test_unbalanced_marks_are_an_error():
    timeline = StepTimeline(CPU)
    timeline.start()
    timeline.input_ready()
    with pytest.raises(RuntimeError, match="without a matching step_done"):
        timeline.stop()


def test_timed_block():
    with timed(CPU) as elapsed:
        time.sleep(0.01)
    assert elapsed() >= 0.01


def test_extrapolate_formula():
    assert extrapolate(2.0, 5, 20) == 8.0
    assert extrapolate(3.0, 10, 10) == 3.0
    with pytest.raises(ValueError):
        extrapolate(1.0, 0, 10)
