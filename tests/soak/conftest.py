"""The soak marker: the short soak runs in the normal suite (``-m "not soak"`` skips it)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "soak: lovia writers in other processes while the app browses and acts",
    )
