"""The reference's speed, kept apart from the textbook: modules that replace plain code of
the library with faster code computing the same thing (a backend, single-kernel versions
of layers). Each registers itself with `minitorch.fast_paths` when imported; importing this
package imports every module in it, so a release that leaves some out simply runs the
plain code there. Nothing outside this package imports its modules: `fast_paths.load`
finds the package, by name, on first use.
"""

import importlib
import pkgutil

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
