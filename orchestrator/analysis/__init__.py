"""The report's numbers: pure functions over the epoch and trial DataFrames (no display code; no I/O
but fidelity's, which reads bench/fidelity.py's JSON files).

    stats         cell_summary, ok_epochs, steady epochs, the definitions
    speedups      speedup_table, the bootstrap interval, energy speedup, the pair flags
    pairing       which CPU cell meets which GPU cell across hardware classes
    parity        final accuracy CPU vs GPU (Welch interval, TOST verdict)
    efficiency    achieved TFLOP/s and MFU against the GPU datasheet peaks
    compile_gain  eager against compiled, per cell measured both ways
    fidelity      bench/fidelity.py's rows and the fidelity bar

The explained answer (issue 32), built once by explained.explain for the report model:
    bounds        the input-/launch-bound thresholds and the verdict rule (defined once)
    study         the explained study's cells as data (paper, device, best, what-if), missing cells
    variants      cells told apart by their DataLoader workers and CPUs too
    answer        three speedups per model (paper, device, best) and every CPU/GPU pair
    bottleneck    a verdict per cell, its evidence and a measured what-if
    scaling       speedup ~ params^b per configuration, its bootstrap interval, the paper's fit
    time_to_accuracy   training seconds until the test accuracy first reaches a target

Nothing here imports orchestrator.report or matplotlib (tests/test_layout.py checks it): the renderers
read these numbers, never the other way round.
"""
