"""The only grader code that runs next to student code.

`main` (the child's program) · `executor` (runs probe programs) · `prange_trace` (the
output cells two ``prange`` iterations share) · `protocol` (the wire format, used by both
sides). The parent copies these files into the child's runtime folder as
``_grader_<name>.py``; they import the standard library only (NumPy lazily), and each
other by a relative import with that copy as the fallback (tests/grader/test_architecture.py).
"""
