"""What a sweep will run, decided before Ray starts: options, grid, resources, placement.

    options      every `benchctl sweep` option, declared once: parameters, defaults, help, README table
    axes         the grid's axes (model, device, batch size, ...), declared once
    presets      named option sets (`--preset paper`); a preset with cells runs a union of grids
    study        the explained study's cells, declared once (`--preset paper-explained` runs them)
    spec         SweepSpec: a sweep's options, checked, and how a stored spec.json compares
    parse        option text to values, and SpecError, the one error of a sweep's options
    trial_plan   TrialPlan: one trial as planned, typed, carried into Tune and the trial
    matrix       the grid expanded into TrialPlans, with their cores and Ray resources
    planning     plan_sweep: the one planning path of a dry run, a sweep and a resume; idle nodes
    dryrun       `benchctl sweep --dry-run`: the plans as a table, where each can run

Nothing here starts Ray or trains anything; the sweep driver (orchestrator.run) runs the plans.
"""
