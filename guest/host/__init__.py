"""What runs on the host to build and boot the lab guest and run the
experiment; every builder caches its product (common.cache)."""
