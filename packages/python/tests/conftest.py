# The suite runs against the installed wheel (a fresh virtual environment): the plugin comes from
# its pytest11 entry point, not from this source tree. pytester runs the inner sessions of the
# report tests.
pytest_plugins = ["pytester"]
