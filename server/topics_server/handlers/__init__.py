"""Thin handlers, one module per spec tag. Each takes a :class:`ValidatedRequest` and the
engine, calls one engine operation, and returns a :class:`Reply`; none holds state."""
