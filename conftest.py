"""Root conftest: plugins the test suite needs (pytest_plugins must live at the rootdir)."""

pytest_plugins = ["pytester"]
