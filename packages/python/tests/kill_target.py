"""Not part of the suite (its name is not test_*): the run that tests/library/packages.rs kills
with SIGKILL. It starts servers through each fixture, writes their pids to $LIMITLAB_PIDS_FILE and
waits to be killed (bounded, in case nobody does)."""

import os
import time


def test_wait_to_be_killed(limitlab_session, limitlab, limitlab_factory):
    cluster = limitlab_factory(cluster=3)
    pids = [limitlab_session.pid, limitlab.pid, cluster.pid]
    path = os.environ["LIMITLAB_PIDS_FILE"]
    with open(path + ".tmp", "w") as f:
        f.write(" ".join(map(str, pids)))
    os.rename(path + ".tmp", path)
    time.sleep(120)
