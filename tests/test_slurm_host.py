"""What the Slurm engine reads from Slurm's own words, without a Slurm."""

from guest.host.slurmengine import minutes


def test_time_limits_read_as_minutes():
    assert [minutes(x) for x in ("infinite", "UNLIMITED", "30:00", "5:30", "1:00:00",
                                 "2-00:00:00", "1-02:03:04")] == \
        [None, None, 30, 6, 60, 2880, 1564]
