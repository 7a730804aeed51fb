# chkwin: the lab's entry points.  Logic lives in the Python packages
# (guest/host/, analysis/, bench/); this is glue.
PY        := /usr/bin/python3
FLAVOURS  := unpatched patched
# make demo: guest/lab_demo.py --help says what each setting does and its
# default; a variable set here (make demo CLOCK=host) passes it on.
DEMO_SETTINGS := CLOCK SHIFT JOBS BOOTS AA_WIDTH POWER PLAN_FROM BOOT_SECONDS \
	RECORD_SECONDS BUDGET MARGIN SEED SMP MEM SAMPLE_HZ RECORD WORKLOAD RR_BOOTS RR_EXACT \
	ENGINE PARTITION ACCOUNT TIME_LIMIT RETRIES PASSES QEMU
DEMO_ARGS = $(foreach v,$(DEMO_SETTINGS),$(if $($(v)),--$(subst _,-,$(shell echo $(v) | tr A-Z a-z)) $($(v))))
WIDTHS         ?= 1,2,4,8,16
# Sampler rates (Hz) of make dose.  On icount a period is instructions (at
# shift 4, 4 kHz is 15,625 of them): far above that the handler is all the
# guest does.
RATES          ?= 0,1000,2000,4000
DOSE_BUDGET    ?= 35

DEBS := linux-source-6.1 qemu-system-arm gcc-aarch64-linux-gnu \
	libc6-dev-arm64-cross bison flex bc libssl-dev libelf-dev dwarves \
	bpftool libbpf-dev clang llvm e2fsprogs cpio xz-utils zstd patch \
	python3-numpy python3-matplotlib python3-pytest python3-scipy kmod rsync \
	binutils-aarch64-linux-gnu libcapstone-dev zlib1g-dev debootstrap gdb-multiarch \
	python3-pytest-xdist proot qemu-user-static
ARM64_DEBS := libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 \
	libzstd-dev:arm64
# The batch engine's scheduler: installed without what it recommends (the
# tests' single-node Slurm needs neither a database nor a mail server).
SLURM_DEBS := slurm-wlm munge
# Where make slurm-start keeps its single-node Slurm.
SLURM_DIR ?= /tmp/chkwin-slurm

.PHONY: all deps kernels prepare prepare-lab testdisk initramfs rootfs test test-host demo dose \
	windows bench stackscan clean-results slurm-start slurm-stop

all: kernels

# Idempotent: installs only what dpkg does not already have.
deps:
	@dpkg --print-foreign-architectures | grep -qx arm64 || \
		{ echo "deps: adding the arm64 architecture"; dpkg --add-architecture arm64; }
	@# Backports (Debian's 6.12 kernel): not automatic, so no 6.1 choice changes.
	@grep -rqs '^Suites:.*bookworm-backports\|bookworm-backports main' \
		/etc/apt/sources.list /etc/apt/sources.list.d/ || \
		{ echo "deps: adding bookworm-backports to apt's sources"; \
		printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			> /etc/apt/sources.list.d/chkwin-backports.sources && apt-get update -q; }
	@missing=$$(for p in $(DEBS) $(ARM64_DEBS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing $$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing \
			|| { echo "deps: error: apt-get could not install: $$missing" >&2; exit 1; }; \
	else echo "deps: all Debian packages present"; fi
	@missing=$$(for p in $(SLURM_DEBS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing $$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing \
			|| { echo "deps: error: apt-get could not install: $$missing" >&2; exit 1; }; \
	fi

kernels: deps
	$(PY) guest/kbuild.py $(addprefix --flavour ,$(FLAVOURS))

# Everything the lab boots from, built side by side (guest/prepare.py):
# lab = what make demo boots, all = what the guest tests boot too.
prepare: deps
	$(PY) guest/prepare.py --what all

prepare-lab: deps
	$(PY) guest/prepare.py --what lab

testdisk: deps
	$(PY) guest/testdisk.py

initramfs: deps
	$(PY) guest/initramfs.py

# The Debian arm64 root filesystem with bpftrace and perf (cached).
rootfs: deps
	$(PY) guest/rootfs.py --print-path

# Tests that need no kernel (not marked guest) run first, and alone by
# make test-host.  make test times each phase (tests/phases.py: make, not
# $(MAKE), so that make -n test only prints); the guest tests, those on
# the host clock among them, run JOBS at a time (default one a core),
# longest groups first (tests/conftest.py), but for those marked quiet
# (the model checked within +-10%), last, in one process with every core.
TEST_JOBS = $(or $(JOBS),$(shell nproc))

test-host: deps
	bash tests/run -m "not guest"

test:
	@$(PY) tests/phases.py "deps" make --no-print-directory deps \
		-- "host tests" env JOBS=$(TEST_JOBS) bash tests/run -m "not guest" \
		-- "lab build" make --no-print-directory prepare \
		-- "guest tests" env JOBS=$(TEST_JOBS) bash tests/run -m "guest and not quiet" \
		-- "guest tests, alone" env JOBS=1 bash tests/run -m "guest and quiet"

demo: deps prepare-lab
	$(PY) guest/lab_demo.py $(DEMO_ARGS)

# stackscan's windows of the lab kernel, watched by chkwin --windows in a
# gcc49 boot: every failure attributed to one (results/windows-<timestamp>).
windows: deps kernels
	$(PY) guest/lab_windows.py

# The dose-response sweeps on the unpatched flavour: window widths
# (untraced) and sampler rates (under the loader).
dose: deps kernels
	$(PY) guest/lab_demo.py $(DEMO_ARGS) --flavours unpatched --widths $(WIDTHS) \
		--rates $(RATES) --record-seconds 0 --no-controls --boots 2 \
		--budget $(DOSE_BUDGET)

bench: deps kernels
	$(PY) -m bench.results --out bench/RESULTS.md

# Builds stackscan (cached) and prints its path.
stackscan: deps
	$(PY) analysis/stackscan/build.py --print-path

# A single-node Slurm on this machine (root; no systemd), for
# make demo ENGINE=slurm where no cluster exists: prints the SLURM_CONF to export.
slurm-start: deps
	$(PY) guest/slurm_local.py start --dir $(SLURM_DIR)

slurm-stop:
	$(PY) guest/slurm_local.py stop --dir $(SLURM_DIR)

clean-results:
	rm -rf results
