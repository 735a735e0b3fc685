"""The machines: joining a Ray cluster, a private network namespace, hardware classes, provenance.

    cluster      connect / alive nodes / the lab's `benchctl cluster` commands, Ray's daemons calmed
    netns        a local sweep's Ray inside its own network namespace
    hardware     a node's hardware class (gpu:H200, cpu:<model>-<cores>c) from Ray's node list
    provenance   the driver's git commit and software versions, written into spec.json
"""
