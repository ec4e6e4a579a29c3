"""Files AutoCode copies into a run's report folder and loads into the project's own test
process (a pytest plugin, a unittest launcher, a node --test reporter).

They run under the project's interpreter, which may not have AutoCode installed, so they
import nothing of AutoCode and only the standard library (and the framework they serve).
Each writes one JSON object per line, flushed as it goes, so a run cut short still leaves
the results it reached.
"""
