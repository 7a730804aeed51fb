"""The test suite (make test); tests marked guest boot QEMU."""
