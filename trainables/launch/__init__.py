"""How a trial's training loop is started: in the Ray worker itself, or in a child process.

    isolated     the child process's protocol (JSON over a pipe) and run_isolated, its supervisor
    prestart     a spare child started before the trial asks for it (the default)
    forkserver   a server that imported torch once and forks each trial's child

Nothing here trains: each way ends in trainables.train.run_trial.
"""
