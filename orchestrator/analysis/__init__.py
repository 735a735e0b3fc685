"""The report's numbers: pure functions over the epoch and trial DataFrames (no display code; no I/O
but fidelity's, which reads bench/fidelity.py's JSON files).

    stats         cell_summary, ok_epochs, steady epochs, the definitions
    speedups      speedup_table, the bootstrap interval, energy speedup, the pair flags
    pairing       which CPU cell meets which GPU cell across hardware classes
    parity        final accuracy CPU vs GPU (Welch interval, TOST verdict)
    efficiency    achieved TFLOP/s and MFU against the GPU datasheet peaks
    compile_gain  eager against compiled, per cell measured both ways
    fidelity      bench/fidelity.py's rows and the fidelity bar

Nothing here imports orchestrator.report or matplotlib (tests/test_layout.py checks it): the renderers
read these numbers, never the other way round.
"""
