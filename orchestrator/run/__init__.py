"""A sweep running: the driver, what runs inside Ray Tune, and what the terminal shows meanwhile.

    sweep        run_sweep: results directory claimed, Ray up, Tune run over the plans, compaction
    tune_glue    the Tune trainable (one trial) and the driver-side ResultsWriter callback
    relayfs      Tune's storage on a cluster: the driver's disk, reached through a Ray actor
    diskspace    what a sweep writes, the warning when space looks short, the clean stop at a full disk
    progress     the live table (or one line per epoch) and the sweep's ETA
    eta, phases  the ETA model, and the phase board the trials post "what I am doing now" on
"""
