"""pytest fixtures for Larder, the local HTTP storage server.

The plugin starts one ``larder`` for the whole run (or uses ``LARDER_URL``),
gives every pytest-xdist worker a namespace of its own, and resets that
namespace to the fixtures before each test that asks for ``larder``.
"""

from .client import Larder, LarderError
from .server import LarderServer

__all__ = ["Larder", "LarderError", "LarderServer"]
