"""The lab guest: guest/host/ runs on the host (builders, the QEMU runner,
the experiment); init, scenarios/, workloads/ and debian/ go into the guest."""
