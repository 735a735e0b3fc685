"""The results schema's version, apart from results.py so that `benchctl --version` reads it without
importing pandas and pyarrow. What each version added: CHANGELOG.md, "Results schema"."""

SCHEMA_VERSION = "5"
READABLE_VERSIONS = ("1", "2", "3", "4", "5")  # older files lack newer columns; they read as null
