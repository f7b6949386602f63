"""`contam emulator`: a loopback server of the four provider APIs (dialects, faults, limits)."""
