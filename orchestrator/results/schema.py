"""The results schema's version, apart from files.py so that `benchctl --version` reads it without
importing pandas and pyarrow. What each version added: CHANGELOG.md, "Results schema"."""

SCHEMA_VERSION = "7"
READABLE_VERSIONS = ("1", "2", "3", "4", "5", "6", "7")  # older files lack newer columns; they read as null
