"""topics_engine.storage — bytes on disk: the filesystem seam, WAL frames and the group-commit
writer, sealed segments and snapshots. Knows nothing about topics' semantics above it."""
