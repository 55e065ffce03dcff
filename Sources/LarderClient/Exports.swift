@_exported import LarderKit
