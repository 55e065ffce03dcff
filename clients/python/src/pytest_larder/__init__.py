"""pytest fixtures for Larder, the local HTTP storage server.

The plugin starts one ``larder`` for the whole run when a test first asks
for a fixture, shared by all pytest-xdist workers (or uses ``LARDER_URL``),
gives every pytest-xdist worker a namespace of its own, and resets that
namespace to the fixtures before each test that asks for ``larder``.
"""

# Larder's own version (`larder --version`), which the wheel carries (packaging/python).
__version__ = "0.1.0"

from .client import Larder, LarderError
from .server import LarderServer

__all__ = ["Larder", "LarderError", "LarderServer"]
