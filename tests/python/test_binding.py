"""Smoke test of the Python binding (runs on CPU; plain asserts, no pytest needed)."""
import fusedmoe

info = fusedmoe.build_info()
assert info["version"] == fusedmoe.version()
assert "dsv3-tp8" in fusedmoe.presets()
text = fusedmoe.explain("dsv3-tp8", 16)
assert "E=256" in text and "groups=8/4" in text, text
try:
    fusedmoe.explain("no-such-model", 1)
    raise AssertionError("unknown preset accepted")
except ValueError:
    pass
print("python binding: 1 passed, 0 failed")
