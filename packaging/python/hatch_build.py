"""The wheel holds a native executable: not pure Python, and tagged for the
oldest glibc its files need (build-wheel.sh reads it off their symbol
versions and passes it in LARDER_WHEEL_PLATFORM, e.g. manylinux_2_34_x86_64)."""

import os

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class LarderWheelTag(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        platform = os.environ.get("LARDER_WHEEL_PLATFORM")
        if not platform:
            raise RuntimeError("build the wheel with packaging/python/build-wheel.sh (LARDER_WHEEL_PLATFORM is not set)")
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{platform}"
